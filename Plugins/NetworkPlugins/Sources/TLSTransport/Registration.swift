import MsgKit
import TCPWire

/// Registers the `tls` transport and the `tls` listener: msg's protocol
/// (msg-tcp(7), the TCPWire package) over TLS.
@_cdecl("msg_plugin_register")
public func msgPluginRegister(_ abi: UInt32, _ registrar: UnsafeMutableRawPointer) -> Int32 {
    PluginRegistrar.register(abiVersion: abi, registrar: registrar, plugin: "TLSTransport", version: MsgVersion.current) { r in
        r.transport(scheme: "tls") { url throws(MsgError) in
            let address = try TCPAddress(url, listening: false, scheme: "tls", extra: TLSClientWire.parameters)
            return TCPTransport(address: address, security: try TLSClientWire(address))
        }
        r.listener(scheme: "tls") { url, context throws(MsgError) in
            let address = try TCPAddress(url, listening: true, scheme: "tls", extra: TLSServerWire.parameters)
            return try TCPListener(address: address, security: try TLSServerWire(address), context: context)
        }
    }
}
