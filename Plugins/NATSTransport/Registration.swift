import MsgKit

/// Registers the `nats` transport: JetStream publish through libnats (msg-nats(7)).
@_cdecl("msg_plugin_register")
public func msgPluginRegister(_ abi: UInt32, _ registrar: UnsafeMutableRawPointer) -> Int32 {
    PluginRegistrar.register(abiVersion: abi, registrar: registrar, plugin: "NATSTransport", version: MsgVersion.current) { r in
        r.transport(scheme: "nats") { url throws(MsgError) in try NATSTransport(url: url) }
    }
}
