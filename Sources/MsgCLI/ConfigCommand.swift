import ArgumentParser
import MsgEngine
import MsgKit

/// `msg config`: the settings in effect and where each came from (the default);
/// `msg config check`: what is wrong in the config file.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Show the settings in effect and where each comes from (the default), or check the config file.",
        discussion: "Keys, defaults and sections: msg-config(5).",
        subcommands: [ConfigShowCommand.self, ConfigCheckCommand.self],
        defaultSubcommand: ConfigShowCommand.self
    )
}

/// `msg config [show]`: as Postfix's `postconf`, each key with its value and what
/// set it, then the sections in the order they are matched.
struct ConfigShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print each setting in effect with what set it: a flag, a variable, the config file and line, or the default; then the sections.")
    @OptionGroup var global: GlobalOptions

    func run() throws {
        let session = try global.lenientSession()
        let out = session.console.buffer()
        out.write(ConfigReport.text(session.settings))
        try out.flush()
        // Shown as read; a command would refuse the file.
        let errors = session.settings.problems.filter(\.isError)
        for e in errors { session.reporter.say(e.description) }
        if !errors.isEmpty { try finish(78) }
    }
}

/// `msg config check`: every problem of the config file, one line each naming its
/// line. Exit 0 when clean or with warnings only, 78 with an error.
struct ConfigCheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check the config file: unknown keys, bad values, transports no plugin serves (errors, exit 78); keys set twice, shadowed sections, sections matching no destination in the store (warnings).")
    @OptionGroup var global: GlobalOptions

    func run() throws {
        let session = try global.lenientSession()
        guard let path = session.settings.configPath else {
            session.reporter.say("no config file: the defaults apply (msg config shows them)")
            return
        }
        session.reportsSetAside = false
        var store: (any Store)?
        do throws(MsgError) {
            store = try session.store(.read)
        } catch {
            session.reporter.say("not checked against the store's destinations: \(error.message)")
        }
        let problems = ConfigCheck.problems(session.settings, loader: session.loader, store: store)
        let out = session.console.buffer()
        for p in problems { out.write(p.description + "\n") }
        try out.flush()
        let errors = problems.filter(\.isError).count, warnings = problems.count - errors
        session.reporter.say(problems.isEmpty ? "\(path): no problems"
            : "\(path): \(errors) error\(errors == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s")")
        if errors > 0 { try finish(78) }
    }
}
