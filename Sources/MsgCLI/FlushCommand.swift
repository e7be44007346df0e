import ArgumentParser
import MsgEngine
import MsgKit

/// `msg flush`: sends due queued messages in FIFO order.
struct FlushCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "flush",
        abstract: "Send due queued messages in FIFO order; print each updated record.",
        discussion: """
        Each batch is recorded as sending (under a lease) before the transport is
        called, and as sent only after it reports delivery. Exit 1 when a message
        became dead, 75 when one was deferred for a later retry.
        """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var targets: TargetOptions
    @OptionGroup var policy: PolicyOptions
    @Option(parsing: .unconditional, help: "Send at most this many messages.") var limit: Int?
    @Flag(help: "Keep running: send what becomes due; stop on SIGINT or SIGTERM.") var watch = false

    func run(_ session: Session) throws {
        // Before the transport starts any thread: they must inherit the blocked signals.
        let stopping = Stopping()
        defer { stopping.end() }
        let (ids, badLines) = try targets.resolve()
        var options = policy.options(statuses: [.queued])
        options.targets = ids
        options.limit = limit
        let flusher = Flusher(store: try session.store(.send), transport: try session.transport(), policy: policy.policy(),
                              options: options, faults: try FaultPoints(), stop: stopping.request)
        let summary = watch ? try Watcher().run(flusher) : try flusher.run(progress: Progress("flushed"))
        if summary.skipped > 0 { Diagnostics.say("\(summary.skipped) of the given messages were not queued and due (see msg retry)") }
        summary.reportDamaged(in: session.settings.store, to: session.reporter)
        // Stopped on request: SIGINT or SIGTERM ends --watch as asked (exit 0); it
        // interrupts a plain flush, which then ends as the signal would have ended it.
        if let stopped = summary.stopped {
            if stopped != .closedOutput, let line = summary.stopLine { Diagnostics.say(line) }
            try finish(watch && stopped != .closedOutput ? 0 : stopped.exitStatus)
        }
        if let line = summary.failureLine { Diagnostics.say(line) }
        try finish(badLines > 0 ? 65 : summary.exitCode)
    }
}
