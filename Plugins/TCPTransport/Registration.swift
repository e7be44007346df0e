import MsgKit
import TCPWire

/// Registers the `tcp` transport and the `tcp` listener: msg's protocol
/// (msg-tcp(7), in the TCPWire package) over a stream in clear text.
@_cdecl("msg_plugin_register")
public func msgPluginRegister(_ abi: UInt32, _ registrar: UnsafeMutableRawPointer) -> Int32 {
    PluginRegistrar.register(abiVersion: abi, registrar: registrar, plugin: "TCPTransport", version: MsgVersion.current) { r in
        r.transport(scheme: "tcp") { url throws(MsgError) in try TCPTransport(url: url) }
        r.listener(scheme: "tcp") { url, context throws(MsgError) in try TCPListener(url: url, context: context) }
    }
}
