import ArgumentParser
import MsgKit

/// `msg`: configuration only; each subcommand owns one step of the queue.
struct MsgCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "msg",
        abstract: "A store-and-forward message outbox for the shell.",
        discussion: """
        Records are newline-delimited JSON on stdin and stdout, so steps chain:
          msg compose --to bob --body hi | msg queue add
          msg queue ls --status queued --format table
        Exit status: 0 done, 1 some messages dead, 64 usage, 65 bad input lines,
        69 plugin or transport unavailable, 74 store I/O, 75 deferred, 78 configuration.
        """,
        version: MsgVersion.current,
        subcommands: [ComposeCommand.self, QueueCommand.self, FlushCommand.self, RetryCommand.self, RecoverCommand.self, DestinationsCommand.self, RouteCommand.self, ConfigCommand.self, MetricsCommand.self,
                      ExportCommand.self, LedgerCommand.self, ListenCommand.self, InboxCommand.self, WebCommand.self, ShellCommand.self, PluginsCommand.self]
    )
}
