import Synchronization

/// The process-wide table of store and transport factories, by URL scheme.
///
/// The only global mutable state in msg: plugins loaded with `dlopen` add to it
/// through ``PluginRegistrar``. It lives in libMsgKit.so, which the host and all
/// plugins share, so there is exactly one.
public final class PluginRegistry: Sendable {
    /// The registry of this process.
    public static let shared = PluginRegistry()

    /// Makes a store for a URL, opened for reading only or for writing.
    /// - Throws: `MsgError` (`storeIO`, `config`…).
    public typealias StoreFactory = @Sendable (PluginURL, StoreAccess) throws(MsgError) -> any Store
    /// Makes a transport for a URL. - Throws: `MsgError` (`config`, `unavailable`…).
    public typealias TransportFactory = @Sendable (PluginURL) throws(MsgError) -> any Transport
    /// Makes a listener for a URL. - Throws: `MsgError` (`config`, `unavailable`…).
    public typealias ListenerFactory = @Sendable (PluginURL, ListenerContext) throws(MsgError) -> any Listener
    /// Opens an application's inbox for a URL (ABI 9.0); nil for a store's own inbox
    /// (``InboxRole/storesOwn``) where the store keeps none.
    /// - Throws: `MsgError` (`config`, `storeIO`, `unreachable`…).
    public typealias InboxFactory = @Sendable (PluginURL, InboxRole) throws(MsgError) -> (any DraftInbox)?

    /// What a plugin is for.
    public enum Kind: String, Sendable {
        case store, transport, listener, inbox
    }

    /// One registered scheme.
    public struct Entry: Sendable {
        /// The plugin's name (`JSONFileStore`).
        public let plugin: String
        /// Its version.
        public let version: String
        /// Where it was loaded from (empty when built in).
        public let path: String
        /// Store, transport, listener or inbox.
        public let kind: Kind
        /// The URL scheme (`json`).
        public let scheme: String
        let store: StoreFactory?
        let transport: TransportFactory?
        let listener: ListenerFactory?
        let inbox: InboxFactory?

        init(plugin: String, version: String, path: String, kind: Kind, scheme: String, store: StoreFactory? = nil,
             transport: TransportFactory? = nil, listener: ListenerFactory? = nil, inbox: InboxFactory? = nil) {
            (self.plugin, self.version, self.path, self.kind, self.scheme) = (plugin, version, path, kind, scheme)
            (self.store, self.transport, self.listener, self.inbox) = (store, transport, listener, inbox)
        }
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var order: [String] = []
        var loadedPaths: Set<String> = []
    }

    private let state = Mutex(State())
    /// Held for a whole load (dlopen and registration), so a second thread asking
    /// for the same scheme waits for the first load instead of finding it half done.
    private let loading = Mutex(())

    /// Runs `body` while no other thread is loading a plugin.
    public func whileLoading<R>(_ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        try loading.withLock { (_) throws(MsgError) -> R in try body() }
    }

    /// An empty registry (tests may make their own).
    public init() {}

    func add(_ entry: Entry) {
        state.withLock { s in
            let key = "\(entry.kind.rawValue):\(entry.scheme)"
            if s.entries[key] == nil { s.order.append(key) }
            s.entries[key] = entry
        }
    }

    /// Every registered scheme, in registration order.
    public var entries: [Entry] {
        state.withLock { s in s.order.compactMap { s.entries[$0] } }
    }

    /// The store factory for `scheme`, if registered.
    public func storeFactory(_ scheme: String) -> StoreFactory? {
        state.withLock { $0.entries["store:\(scheme)"]?.store }
    }

    /// The transport factory for `scheme`, if registered.
    public func transportFactory(_ scheme: String) -> TransportFactory? {
        state.withLock { $0.entries["transport:\(scheme)"]?.transport }
    }

    /// The listener factory for `scheme`, if registered.
    public func listenerFactory(_ scheme: String) -> ListenerFactory? {
        state.withLock { $0.entries["listener:\(scheme)"]?.listener }
    }

    /// The inbox factory for `scheme`, if registered.
    public func inboxFactory(_ scheme: String) -> InboxFactory? {
        state.withLock { $0.entries["inbox:\(scheme)"]?.inbox }
    }

    /// Records that the file at `path` has been loaded; false when it already was.
    public func markLoaded(_ path: String) -> Bool {
        state.withLock { $0.loadedPaths.insert(path).inserted }
    }

    /// Hands a registrar for the plugin at `path` to its `msg_plugin_register`
    /// (`register`, found by the host's loader) and keeps what it registers.
    /// - Returns: 0, or the plugin's own ABI version when it cannot be loaded here.
    public func register(pluginAt path: String, _ register: (UInt32, UnsafeMutableRawPointer) -> Int32) -> Int32 {
        let registrar = PluginRegistrar(path: path)
        let status = withExtendedLifetime(registrar) {
            register(PluginRegistrar.abiVersion, Unmanaged.passUnretained(registrar).toOpaque())
        }
        if status == 0 { for entry in registrar.registered { add(entry) } }
        return status
    }

    /// Registers a factory directly (a plugin built into a test, say).
    public func registerStore(scheme: String, plugin: String, version: String = "0", factory: @escaping StoreFactory) {
        add(Entry(plugin: plugin, version: version, path: "", kind: .store, scheme: scheme, store: factory))
    }

    /// Registers a transport factory directly.
    public func registerTransport(scheme: String, plugin: String, version: String = "0", factory: @escaping TransportFactory) {
        add(Entry(plugin: plugin, version: version, path: "", kind: .transport, scheme: scheme, transport: factory))
    }

    /// Registers an inbox factory directly.
    public func registerInbox(scheme: String, plugin: String, version: String = "0", factory: @escaping InboxFactory) {
        add(Entry(plugin: plugin, version: version, path: "", kind: .inbox, scheme: scheme, inbox: factory))
    }
}
