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
    /// Per destination pattern, the transport its messages take: the `--route`s
    /// given for the run, then the config file's `[destination PATTERN]` sections with
    /// a `transport`, in the file's order; the first that matches a recipient wins,
    /// the rest take ``transport``. Only the `--route`s when `--transport` or
    /// `MSG_TRANSPORT` named one transport for the run (``routeOverride`` says so).
    public var routes: [Route] = []
    /// What the config file sets outside its sections (over the defaults; a run's
    /// flags go over it).
    public var configured = ConfigValues()
    /// The `--route`s, then the config file's `[destination PATTERN]` sections, in order.
    public var sections: [DestinationSection] = []
    /// The config file read; nil when there is none.
    public var configPath: String?
    /// What is wrong in the config file (``Settings/resolve(_:env:)`` refuses the
    /// first error; `msg config check` lists them).
    public var problems: [ConfigProblem] = []
    /// Where each of `home`, `store`, `transport`, `plugin_path`, `listen` came from:
    /// `--store`, `MSG_STORE`, `FILE line N` or `default`.
    public var origins: [String: String] = [:]
    /// One line for stderr when `--transport` or `MSG_TRANSPORT` replaced the
    /// transports of the config file's sections for the run; nil otherwise.
    public var routeOverride: String?

    /// A destination pattern and the transport URL its messages take.
    public struct Route: Sendable, Equatable {
        public var pattern: String
        public var transport: String
        /// The section or `--route` that set it (``DestinationSection/origin``).
        public var origin: String
        public init(pattern: String, transport: String, origin: String = "") {
            self.pattern = pattern
            self.transport = transport
            self.origin = origin
        }
    }

    /// The transport URL messages to `to` take, and what chose it: the first of
    /// ``routes`` that matches (its section or `--route`), else ``transport`` and
    /// what set it.
    public func route(for to: String) -> (url: String, origin: String) {
        if let i = RoutingTransport.route(of: to, patterns: routes.map(\.pattern)) { return (routes[i].transport, routes[i].origin) }
        return (transport, origins["transport"] ?? "default")
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
        /// `--route PATTERN=URL`, in the order given.
        public var routes: [String]
        public init(store: String? = nil, transport: String? = nil, pluginPath: String? = nil, config: String? = nil, routes: [String] = []) {
            self.store = store
            self.transport = transport
            self.pluginPath = pluginPath
            self.config = config
            self.routes = routes
        }
    }

    /// The outbox when no transport is named: a file drop in msg's home.
    public static func defaultTransport(home: String) -> String { "file:\(home)/outbox" }

    /// Resolves the settings.
    /// - Throws: `config` (78) for a missing explicit config file, an error in it
    ///   (the first, naming its line), or no way to find a home directory; `usage`
    ///   for a `--route` that is not `PATTERN=URL`.
    public static func resolve(_ flags: Overrides, env: (String) -> String? = SystemCalls.environment) throws(MsgError) -> Settings {
        let settings = try read(flags, env: env)
        if let first = settings.problems.first(where: \.isError) { throw first.error }
        return settings
    }

    /// The settings and what is wrong in the config file, without refusing it
    /// (`msg config check`). - Throws: as ``resolve(_:env:)``, but for the file's errors.
    public static func read(_ flags: Overrides, env: (String) -> String? = SystemCalls.environment) throws(MsgError) -> Settings {
        let file = try ConfigFile.load(explicit: flags.config ?? env("MSG_CONFIG"), env: env)
        var origins: [String: String] = [:]
        let home: String
        if let h = env("MSG_HOME") {
            home = h
            origins["home"] = "MSG_HOME"
        } else if let xdg = env("XDG_DATA_HOME") {
            home = xdg + "/msg"
            origins["home"] = "XDG_DATA_HOME"
        } else if let user = env("HOME") {
            home = user + "/.local/share/msg"
            origins["home"] = "default"
        } else {
            throw MsgError(.config, "cannot tell where to keep the queue: set MSG_HOME or HOME")
        }
        func expand(_ text: String) -> String { ConfigFile.expand(text, home: home, env: env) }
        /// The first of the flag, the variable, the file's key; where it came from.
        func pick(_ key: String, flag: String?, _ flagName: String, _ variable: String) -> String? {
            if let flag {
                origins[key] = flagName
                return flag
            }
            if let v = env(variable) {
                origins[key] = variable
                return v
            }
            guard let v = file.values[key] else {
                origins[key] = "default"
                return nil
            }
            origins[key] = "\(file.path) line \(v.line)"
            return expand(v.text)
        }
        let named = pick("store", flag: flags.store, "--store", "MSG_STORE")
        let store = named ?? "sqlite:\(home)/queue.sqlite"
        let explicitTransport = pick("transport", flag: flags.transport, "--transport", "MSG_TRANSPORT")
        let transport = explicitTransport ?? Self.defaultTransport(home: home)
        let path = pick("plugin_path", flag: flags.pluginPath, "--plugin-path", "MSG_PLUGIN_PATH") ?? ""
        let listen = pick("listen", flag: nil, "", "MSG_LISTEN")
        var settings = Settings(home: home, store: store, transport: transport,
                                pluginPath: path.split(separator: ":").map(String.init), listen: listen,
                                defaultStoreFile: named == nil ? "\(home)/queue.sqlite" : nil)
        settings.origins = origins
        settings.configPath = file.path.isEmpty ? nil : file.path
        var problems = file.problems
        settings.configured = ConfigValues(file.values, in: file, problems: &problems, expand: expand)
        var sections: [DestinationSection] = []
        for given in flags.routes {
            guard let eq = given.firstIndex(of: "="), eq != given.startIndex, given.index(after: eq) != given.endIndex else {
                throw MsgError(.usage, "--route '\(given)': expected PATTERN=URL, as --route '*@example.com=smtp://mail.example.com'")
            }
            var values = ConfigValues()
            values.transport = String(given[given.index(after: eq)...])
            sections.append(DestinationSection(pattern: String(given[..<eq]), line: 0, values: values))
        }
        for section in file.sections {
            sections.append(DestinationSection(pattern: section.pattern, line: section.line,
                                               values: ConfigValues(section.values, in: file, problems: &problems, expand: expand)))
        }
        settings.problems = problems.sorted { $0.line < $1.line }
        settings.retry = RetryPolicy(configured: settings.configured, sections: sections)
        // One transport named for the run replaces the file's routes (not the run's own).
        let replaced = file.sections.filter { $0.values["transport"] != nil }
        if (flags.transport ?? env("MSG_TRANSPORT")) != nil, !replaced.isEmpty {
            let lines = replaced.map { String($0.line) }.joined(separator: ", ")
            let by = flags.transport != nil ? "--transport" : "MSG_TRANSPORT"
            settings.routeOverride = "warning: \(by) \(Session.shown(transport)) replaces the transport of \(replaced.count) [destination] section\(replaced.count == 1 ? "" : "s") of \(file.path) (line\(replaced.count == 1 ? "" : "s") \(lines)) for this run: their destinations go to it too; --route PATTERN=URL keeps one"
        }
        settings.sections = sections
        let overridden = settings.routeOverride != nil
        settings.routes = sections.compactMap { section in
            guard let url = section.values.transport, section.line == 0 || !overridden else { return nil }
            return Route(pattern: section.pattern, transport: url, origin: section.origin)
        }
        return settings
    }
}
