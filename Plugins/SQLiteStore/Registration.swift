import CSQLite
import MsgKit

/// Registers the `sqlite:` scheme.
@_cdecl("msg_plugin_register")
public func msgPluginRegister(_ abi: UInt32, _ registrar: UnsafeMutableRawPointer) -> Int32 {
    PluginRegistrar.register(abiVersion: abi, registrar: registrar, plugin: "SQLiteStore", version: MsgVersion.current) { r in
        _ = msg_sqlite_disable_memstatus()
        r.store(scheme: "sqlite") { url, access throws(MsgError) in try SQLiteStore(url: url, access: access) }
        // An application's inbox (msg-inbox(1)); msg's own SQLite store keeps none.
        r.inbox(scheme: "sqlite") { url, role throws(MsgError) in role == .named ? try SQLiteInbox(url: url) : nil }
    }
}
