import HTTPTransport
import MsgKit

// The plugin's entry point, in a target of its own: the tests link the transport's
// code, and a test bundle can hold only one msg_plugin_register (PostgresStore's).

/// Registers the `http:` and `https:` schemes.
@_cdecl("msg_plugin_register")
public func msgPluginRegister(_ abi: UInt32, _ registrar: UnsafeMutableRawPointer) -> Int32 {
    PluginRegistrar.register(abiVersion: abi, registrar: registrar, plugin: "HTTPTransport", version: MsgVersion.current) { r in
        r.transport(scheme: "http") { url throws(MsgError) in try HTTPTransport(url: url) }
        r.transport(scheme: "https") { url throws(MsgError) in try HTTPTransport(url: url) }
    }
}
