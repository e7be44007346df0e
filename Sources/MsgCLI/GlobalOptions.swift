import ArgumentParser
import MsgEngine
import MsgKit

/// The options every command takes (docs/DESIGN.md 5), also read from the environment
/// and the config file.
struct GlobalOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The store URL: sqlite:PATH (default $MSG_HOME/queue.sqlite), json:PATH or postgres://… (env MSG_STORE).", valueName: "url"),
            completion: .list(Completion.storeSchemes))
    var store: String?

    @Option(help: ArgumentHelp("The transport URL: file:DIR (default $MSG_HOME/outbox), tcp://HOST:PORT, exec:COMMAND, http(s)://URL or stdout: (env MSG_TRANSPORT).", valueName: "url"),
            completion: .list(Completion.transportSchemes))
    var transport: String?

    @Option(name: .customLong("route"), help: ArgumentHelp("The transport of the destinations matching PATTERN (fnmatch, as --to), before the config file's [destination] sections; repeatable, and kept when --transport names one for the rest.", valueName: "pattern=url"))
    var routes: [String] = []

    @Option(name: .customLong("plugin-path"), help: ArgumentHelp("Directories searched first for plugins, colon-separated (env MSG_PLUGIN_PATH).", valueName: "dirs"))
    var pluginPath: String?

    @Option(help: ArgumentHelp("The config file (env MSG_CONFIG; default ~/.config/msg/config).", valueName: "file"))
    var config: String?

    /// Resolves the settings (flags, then this run's environment, then the config
    /// file) and starts a session. - Throws: `config`.
    func session() throws(MsgError) -> Session {
        let invocation = Invocation.current
        return Session(settings: try Settings.resolve(overrides, env: invocation.variable), console: invocation.console)
    }

    /// A session whose config file may have errors, kept in its settings' problems
    /// (`msg config`, which shows them). - Throws: `config` for a file that cannot be read.
    func lenientSession() throws(MsgError) -> Session {
        let invocation = Invocation.current
        return Session(settings: try Settings.read(overrides, env: invocation.variable), console: invocation.console)
    }

    private var overrides: Settings.Overrides {
        Settings.Overrides(store: store, transport: transport, pluginPath: pluginPath, config: config, routes: routes)
    }
}

/// How bad input lines are handled.
struct InputOptions: ParsableArguments {
    @Option(name: .customLong("on-error"), help: "skip: report bad lines and go on (exit 65); abort: store nothing if any line is bad.")
    var onError: OnError = .skip
}

extension OnError: ExpressibleByArgument {}
extension OutputFormat: ExpressibleByArgument {}
