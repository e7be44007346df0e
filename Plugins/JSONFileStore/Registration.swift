import MsgKit

/// Registers the `json:` scheme.
@_cdecl("msg_plugin_register")
public func msgPluginRegister(_ abi: UInt32, _ registrar: UnsafeMutableRawPointer) -> Int32 {
    PluginRegistrar.register(abiVersion: abi, registrar: registrar, plugin: "JSONFileStore", version: MsgVersion.current) { r in
        r.store(scheme: "json") { url, access throws(MsgError) in try JSONFileStore(url: url, access: access) }
    }
}
