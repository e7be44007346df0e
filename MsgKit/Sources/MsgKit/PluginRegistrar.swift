/// What a plugin's `msg_plugin_register` receives: the place to register its schemes.
///
/// A plugin exports one C symbol and hands over to ``register(abiVersion:registrar:plugin:version:_:)``:
///
/// ```swift
/// @_cdecl("msg_plugin_register")
/// public func msgPluginRegister(_ abi: UInt32, _ registrar: UnsafeMutableRawPointer) -> Int32 {
///     PluginRegistrar.register(abiVersion: abi, registrar: registrar, plugin: "MyTransport", version: "1.0.0") { r in
///         r.transport(scheme: "my") { url in try MyTransport(url: url) }
///     }
/// }
/// ```
public final class PluginRegistrar {
    /// The plugin ABI this MsgKit speaks: ``abiMajor`` and ``abiMinor`` in one
    /// number, `major << 16 | minor` (what `msg_plugin_register` is given).
    ///
    /// MsgKit is built without library evolution: the layout of every public type is
    /// part of this ABI. A change to it (a stored property gained, lost or moved, a
    /// protocol requirement, an enum case) bumps the major: a plugin built for
    /// another major is refused instead of misreading memory. Additions that leave
    /// every existing layout as it was (a new type, a new function, a new extension)
    /// bump the minor: a plugin built for an older minor of the same major still
    /// loads; one built for a newer minor is refused, as it may call what this
    /// MsgKit lacks. `scripts/abi check` tells them apart (docs/DESIGN.md 4).
    ///
    /// History (majors): 2 listeners; 3 read or write access, stores set damaged
    /// files aside, claims return stored text; 4 the encoded record crosses the
    /// whole boundary, damaged records as stand-ins, ``Headers``, listener context;
    /// 5 per-destination delivery (expiry, destination states, parallelism).
    /// 6.0: one claim (``Store/claimSession(_:)`` with the loop in ``ClaimLoop``),
    /// destination states read per key, records re-encoded by splicing
    /// (``RecordLayout``), the toolbox moved out to MsgSupport.
    /// 7.0: stores that count (`Store.counts(now:excluding:)`, ``Tally``);
    /// 7.1 claims that lock destinations, not the store (``DestinationLocks``), and
    /// records counted by creation time (``CreationCounts``); 7.2 listeners that
    /// read their files again on SIGHUP (``ListenerReloading``); 7.3 where commits
    /// changed the queue (`ChangeFloors`, `ScanHints`); 7.4 the ledger
    /// (`LedgerStore`); 7.5 transports' receipts (``DeliveryReceipts``).
    /// 8.0: a core ``Store`` of ten requirements, what is optional declared in one
    /// ``StoreCapabilities`` value (no casts: ``ClaimSession/locks``,
    /// ``Transport/receipts`` and ``Listener/connectionCounts`` and
    /// ``Listener/reloading`` likewise); ``LedgerLeaf`` with its format version
    /// and ``Digest`` under the ABI; the host's own types (the plugin loader, UUIDv7
    /// ids, destination keys) out of MsgKit; 8.1 the one owner of what a change
    /// means beside its row (``ChangeRecorder``), with the ledger's hashing; 8.2 a
    /// record's leaf made when it is encoded (``EncodedMessage/init(_:preparingLedger:)``).
    /// 9.0: inbox plugins, an application's table of drafts (``DraftInbox``, a
    /// registry kind of its own); 9.1 an outcome's leaf made where it is spliced
    /// (``EncodedMessage/preparingLedger(stored:)``); 9.2 ``Hex`` to and from bytes;
    /// 9.3 ledger leaf format 2 (a UUID kept as its 16 bytes, ``LedgerLeaf``), which a
    /// host of 9.2 would name a newer format, and ``UUIDText`` over bytes; 9.4 the
    /// error code ``MsgError/Code/noPermission`` (exit 77), a permission and not damage;
    /// 9.5 web server plugins (``WebServer``, ``WebServers``), what `msg web` and `--metrics` serve on;
    /// 9.6 the commit journal's bytes and fold (``CommitFold``).
    /// 10.0: one capability for the journal (``JournalStore``, `journal`) in place of
    /// `StoreCounting`, `ChangeFloors` and `LedgerStore`: a store gives its journal's
    /// fold, floors since a mark, kept values and ledger runs, and MsgKit makes the
    /// counts, floors, scan hints and ledger of them; 10.1 a record's id, recipient
    /// and status read where it is kept, and ``EncodedMessage/reading(_:)``, without
    /// the copy ``EncodedMessage/message`` makes.
    public static let abiVersion: UInt32 = abiMajor << 16 | abiMinor
    /// The major version: layouts.
    public static let abiMajor: UInt32 = 10
    /// The minor version: additions.
    public static let abiMinor: UInt32 = 1

    /// The ABI version compiled into the caller (inlined, so a plugin carries the
    /// version of the MsgKit it was built against).
    @inlinable public static var compiledABIVersion: UInt32 { 10 << 16 | 1 }

    /// `6.0` for a version number as ``abiVersion`` holds it; a number below 65536
    /// is a plugin of the time before minors (ABI 5 and older): its major alone.
    public static func describe(abi version: UInt32) -> String {
        version < 1 << 16 ? "\(version)" : "\(version >> 16).\(version & 0xFFFF)"
    }

    let path: String
    var plugin = ""
    var version = ""
    var registered: [PluginRegistry.Entry] = []

    init(path: String) { self.path = path }

    /// Registers a store factory for `scheme`.
    public func store(scheme: String, _ factory: @escaping PluginRegistry.StoreFactory) {
        registered.append(.init(plugin: plugin, version: version, path: path, kind: .store, scheme: scheme, store: factory))
    }

    /// Registers a transport factory for `scheme`.
    public func transport(scheme: String, _ factory: @escaping PluginRegistry.TransportFactory) {
        registered.append(.init(plugin: plugin, version: version, path: path, kind: .transport, scheme: scheme, transport: factory))
    }

    /// Registers a listener factory for `scheme` (what `msg listen SCHEME://…` runs).
    public func listener(scheme: String, _ factory: @escaping PluginRegistry.ListenerFactory) {
        registered.append(.init(plugin: plugin, version: version, path: path, kind: .listener, scheme: scheme, listener: factory))
    }

    /// Registers an inbox factory for `scheme` (what `msg inbox … SCHEME:…` and
    /// `flush --inbox` open; ABI 9.0).
    public func inbox(scheme: String, _ factory: @escaping PluginRegistry.InboxFactory) {
        registered.append(.init(plugin: plugin, version: version, path: path, kind: .inbox, scheme: scheme, inbox: factory))
    }

    /// The body of a plugin's `msg_plugin_register`: checks the ABI version (the
    /// host's major must be the plugin's, its minor at least the plugin's), then lets
    /// `body` register the plugin's schemes.
    /// - Returns: 0 on success, or the plugin's own ABI version when the host cannot load it.
    @inlinable
    public static func register(abiVersion: UInt32, registrar: UnsafeMutableRawPointer, plugin: String, version: String,
                                _ body: (PluginRegistrar) -> Void) -> Int32 {
        guard abiVersion >> 16 == compiledABIVersion >> 16, abiVersion & 0xFFFF >= compiledABIVersion & 0xFFFF else {
            return Int32(bitPattern: compiledABIVersion)
        }
        let r = Unmanaged<PluginRegistrar>.fromOpaque(registrar).takeUnretainedValue()
        r.begin(plugin: plugin, version: version)
        body(r)
        return 0
    }

    /// Names the plugin whose schemes follow.
    public func begin(plugin: String, version: String) {
        self.plugin = plugin
        self.version = version
    }
}
