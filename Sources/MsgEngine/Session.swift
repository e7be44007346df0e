import MsgKit

/// One command's view of msg: its settings, and the store and transport it opens
/// on first use (so `--help` and `queue count` never load a transport).
public final class Session {
    /// The resolved settings.
    public let settings: Settings
    /// Finds and loads plugins.
    public let loader: PluginLoader
    private var openStore: (any Store)?
    private var openTransport: (any Transport)?

    /// A session on `settings`.
    public init(settings: Settings) {
        self.settings = settings
        self.loader = PluginLoader(extraDirectories: settings.pluginPath)
    }

    /// The store, opened on first use. - Throws: `unavailable`, `config`, `storeIO`.
    public func store() throws(MsgError) -> any Store {
        if let openStore { return openStore }
        let s = try loader.openStore(settings.store)
        openStore = s
        return s
    }

    /// The transport, opened on first use. - Throws: `unavailable`, `config`.
    public func transport() throws(MsgError) -> any Transport {
        if let openTransport { return openTransport }
        let t = try loader.openTransport(settings.transport)
        openTransport = t
        return t
    }
}

/// What to do with a bad input line (`--on-error`).
public enum OnError: String, Sendable, CaseIterable {
    /// Report it on stderr, go on with the good lines, exit 65 at the end.
    case skip
    /// Report it and stop before anything is stored; exit 65.
    case abort
}
