import MsgKit
import MsgSupport

/// Where msg keeps its queue, where it delivers, and where it finds plugins:
/// from flags, else the environment, else the config file, else defaults (docs/DESIGN.md 5).
public struct Settings: Sendable, Equatable {
    /// `MSG_HOME`: `$XDG_DATA_HOME/msg`, else `~/.local/share/msg`.
    public var home: String
    /// The store URL (`--store`, `MSG_STORE`).
    public var store: String
    /// The transport URL (`--transport`, `MSG_TRANSPORT`).
    public var transport: String
    /// Extra plugin directories searched first (`--plugin-path`, `MSG_PLUGIN_PATH`).
    public var pluginPath: [String]
    /// Where `msg listen` listens when not told (`MSG_LISTEN`, `listen` in the config
    /// file): so a token in it need not be given in argv.
    public var listen: String? = nil
    /// The retry policy the config file sets (global keys and `[destination]`
    /// sections), over the defaults; a run's flags go over it.
    public var retry = RetryPolicy()
    /// Per destination pattern, the transport its messages take (the config file's
    /// `[destination PATTERN]` sections with a `transport`), in the file's order; the
    /// first that matches a recipient wins, the rest take ``transport``. Empty when
    /// `--transport` or `MSG_TRANSPORT` named one transport for the run.
    public var routes: [Route] = []

    /// A destination pattern and the transport URL its messages take.
    public struct Route: Sendable, Equatable {
        public var pattern: String
        public var transport: String
        public init(pattern: String, transport: String) {
            self.pattern = pattern
            self.transport = transport
        }
    }

    /// The default store's file when no flag, variable or config file named a store
    /// (`$MSG_HOME/queue.sqlite`); nil when one was named. Before anything was
    /// queued it does not exist, and commands that only look see an empty queue.
    public var defaultStoreFile: String? = nil

    /// What the user gave on the command line; nil where nothing was given.
    public struct Overrides: Sendable {
        public var store: String?
        public var transport: String?
        public var pluginPath: String?
        public var config: String?
        public init(store: String? = nil, transport: String? = nil, pluginPath: String? = nil, config: String? = nil) {
            self.store = store
            self.transport = transport
            self.pluginPath = pluginPath
            self.config = config
        }
    }

    /// The outbox when no transport is named: a file drop in msg's home.
    public static func defaultTransport(home: String) -> String { "file:\(home)/outbox" }

    /// Resolves the settings.
    /// - Throws: `config` (78) for a missing explicit config file, a bad line in it,
    ///   or no way to find a home directory.
    public static func resolve(_ flags: Overrides, env: (String) -> String? = SystemCalls.environment) throws(MsgError) -> Settings {
        let file = try ConfigFile.load(explicit: flags.config ?? env("MSG_CONFIG"), env: env)
        let home: String
        if let h = env("MSG_HOME") {
            home = h
        } else if let xdg = env("XDG_DATA_HOME") {
            home = xdg + "/msg"
        } else if let user = env("HOME") {
            home = user + "/.local/share/msg"
        } else {
            throw MsgError(.config, "cannot tell where to keep the queue: set MSG_HOME or HOME")
        }
        func fromFile(_ key: String) -> String? {
            file[key].map { ConfigFile.expand($0, home: home, env: env) }
        }
        let explicitTransport = flags.transport ?? env("MSG_TRANSPORT")
        let named = flags.store ?? env("MSG_STORE") ?? fromFile("store")
        let store = named ?? "sqlite:\(home)/queue.sqlite"
        let transport = flags.transport ?? env("MSG_TRANSPORT") ?? fromFile("transport") ?? Self.defaultTransport(home: home)
        let path = flags.pluginPath ?? env("MSG_PLUGIN_PATH") ?? fromFile("plugin_path") ?? ""
        var settings = Settings(home: home, store: store, transport: transport,
                                pluginPath: path.split(separator: ":").map(String.init), listen: env("MSG_LISTEN") ?? fromFile("listen"),
                                defaultStoreFile: named == nil ? "\(home)/queue.sqlite" : nil)
        settings.retry = try RetryPolicy(config: file)
        if explicitTransport == nil {
            settings.routes = file.sections.compactMap { section in
                section.values["transport"].map { Route(pattern: section.pattern, transport: ConfigFile.expand($0.text, home: home, env: env)) }
            }
        }
        return settings
    }
}
