import MsgKit
import SMTPTransport

/// Registers the `smtp` and `smtps` transports.
@_cdecl("msg_plugin_register")
public func msgPluginRegister(_ abi: UInt32, _ registrar: UnsafeMutableRawPointer) -> Int32 {
    PluginRegistrar.register(abiVersion: abi, registrar: registrar, plugin: "SMTPTransport", version: MsgVersion.current) { r in
        r.transport(scheme: "smtp") { url throws(MsgError) in try SMTPTransport(url: url) }
        r.transport(scheme: "smtps") { url throws(MsgError) in try SMTPTransport(url: url) }
    }
}
