import ArgumentParser
import MsgEngine
import MsgKit

/// `msg plugins`: lists the plugins found on the search path.
struct PluginsCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "plugins",
        abstract: "List plugins found: name, kind, schemes, version, path.",
        discussion: "Plugins that are refused (untrusted permissions, wrong ABI) are reported on stderr; the exit status is then 69."
    )

    @OptionGroup var global: GlobalOptions
    @Option(help: "ndjson or table (default: table on a terminal, else ndjson).") var format: OutputFormat?

    func run(_ session: Session) throws {
        let (entries, problems) = session.loader.loadAll()
        let console = session.console
        try PluginReport(entries: entries).write(format: format ?? console.format, output: console.buffer(), width: console.width)
        for p in problems { console.say(p.message) }
        try finish(problems.isEmpty ? 0 : MsgError.Code.unavailable.exitCode)
    }
}
