#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import ArgumentParser
import MsgEngine
import MsgKit

/// `msg shell`: the same commands, typed at a prompt (GNU readline) or read from a script.
struct ShellCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "shell",
        abstract: "Run msg commands interactively, with history and tab completion; or a script of them from stdin.",
        discussion: """
            Each line is split as a shell splits words and run in this process by the same parser. \
            The store and other global options given to shell apply to every line. \
            With standard input not a terminal, the lines are a script: no prompt; it stops at the first \
            failing line and exits with its status.
            """
    )

    @OptionGroup var global: GlobalOptions

    func run(_ session: Session) throws {
        let settings = session.settings
        // Every line runs with the shell's settings unless it names its own.
        var invocation = Invocation.current
        invocation.environment["MSG_STORE"] = settings.store
        // A transport the shell was given, not the config file's (whose sections
        // route per destination: one named for every line would replace them).
        if global.transport != nil { invocation.environment["MSG_TRANSPORT"] = settings.transport }
        if let config = settings.configPath, global.config != nil { invocation.environment["MSG_CONFIG"] = config }
        if !settings.pluginPath.isEmpty { invocation.environment["MSG_PLUGIN_PATH"] = settings.pluginPath.joined(separator: ":") }
        let runner = ShellRunner(invocation: invocation)
        if isatty(0) == 1 {
            try finish(InteractiveShell(runner: runner, settings: settings).run())
        } else {
            try finish(runner.runScript())
        }
    }
}
