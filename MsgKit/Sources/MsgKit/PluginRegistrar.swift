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
    /// The plugin ABI this MsgKit speaks. A plugin built against another one is refused.
    ///
    /// MsgKit is built without library evolution: the layout of every public type is
    /// part of this ABI. Bump it (and ``compiledABIVersion``) whenever a public type
    /// gains, loses or reorders a stored property or a protocol requirement, or a
    /// plugin built earlier will misread memory instead of being refused.
    /// Version 2 added listeners (``listener(scheme:_:)``). Version 3: stores are
    /// opened for reading or writing (``StoreAccess``), name the damaged files they
    /// set aside (``Store/setAside()``), and a claim returns the records with the text
    /// stored for each (``EncodedMessage``). Version 4: the encoded record crosses the
    /// whole boundary (``Store/get(_:)``, ``Store/list(_:_:)``, ``Transport/deliver(_:deadline:)``),
    /// stores give damaged records in place of text that does not read (``Store``,
    /// requirement 10), headers are ``Headers``, and a listener is told its sink's name
    /// and whether it may take records without a token (``ListenerContext``).
    /// Version 5: per-destination delivery. A record may expire (``Message/expiresAt``),
    /// stores keep destination state and claim through a ``ClaimPlanner``, and a
    /// transport says how many records one call may have in flight
    /// (``Transport/parallelism``).
    public static let abiVersion: UInt32 = 5

    /// The ABI version compiled into the caller (inlined, so a plugin carries the
    /// version of the MsgKit it was built against).
    @inlinable public static var compiledABIVersion: UInt32 { 5 }

    let path: String
    var plugin = ""
    var version = ""
    var registered: [PluginRegistry.Entry] = []

    init(path: String) { self.path = path }

    /// Registers a store factory for `scheme`.
    public func store(scheme: String, _ factory: @escaping PluginRegistry.StoreFactory) {
        registered.append(.init(plugin: plugin, version: version, path: path, kind: .store, scheme: scheme, store: factory, transport: nil, listener: nil))
    }

    /// Registers a transport factory for `scheme`.
    public func transport(scheme: String, _ factory: @escaping PluginRegistry.TransportFactory) {
        registered.append(.init(plugin: plugin, version: version, path: path, kind: .transport, scheme: scheme, store: nil, transport: factory, listener: nil))
    }

    /// Registers a listener factory for `scheme` (what `msg listen SCHEME://…` runs).
    public func listener(scheme: String, _ factory: @escaping PluginRegistry.ListenerFactory) {
        registered.append(.init(plugin: plugin, version: version, path: path, kind: .listener, scheme: scheme, store: nil, transport: nil, listener: factory))
    }

    /// The body of a plugin's `msg_plugin_register`: checks the ABI version, then lets
    /// `body` register the plugin's schemes.
    /// - Returns: 0 on success, or the plugin's own ABI version when the host speaks another.
    @inlinable
    public static func register(abiVersion: UInt32, registrar: UnsafeMutableRawPointer, plugin: String, version: String,
                                _ body: (PluginRegistrar) -> Void) -> Int32 {
        guard abiVersion == compiledABIVersion else { return Int32(compiledABIVersion) }
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
