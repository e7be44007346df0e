import MsgKit

/// Registers the `http` and `https` web servers: what `msg web` and `--metrics`
/// serve on (ABI 9.5).
@_cdecl("msg_plugin_register")
public func msgPluginRegister(_ abi: UInt32, _ registrar: UnsafeMutableRawPointer) -> Int32 {
    PluginRegistrar.register(abiVersion: abi, registrar: registrar, plugin: "WebServer", version: MsgVersion.current) { r in
        for scheme in ["http", "https"] {
            r.webServer(scheme: scheme) { url, context throws(MsgError) in try HummingbirdServer(url, context: context) }
        }
    }
}
