#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import ArgumentParser
import MsgEngine
import MsgKit

/// `msg flush`: sends due queued messages in FIFO order.
struct FlushCommand: ParsableCommand {
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
    @Option(help: "Send at most this many messages.") var limit: Int?
    @Flag(help: "Keep running: send what becomes due; stop on SIGINT or SIGTERM.") var watch = false

    func run() throws {
        // Before the transport starts any thread: they must inherit the blocked signals.
        let stopping = Stopping()
        defer { stopping.end() }
        let session = try global.session()
        let (ids, badLines) = try targets.resolve()
        var options = try policy.options(statuses: [.queued])
        options.targets = ids
        options.limit = limit
        let flusher = Flusher(store: try session.store(.send), transport: try session.transport(), policy: try policy.policy(),
                              options: options, faults: try FaultPoints(), stop: stopping.request)
        let summary = watch ? try Watcher().run(flusher) : try flusher.run(progress: Progress("flushed"))
        if summary.skipped > 0 { Diagnostics.say("\(summary.skipped) of the given messages were not queued and due (see msg retry)") }
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

/// `msg retry`: re-sends due failed messages, or redrives dead ones.
struct RetryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Re-send failed messages that are due (--now: all); --dead returns dead ones to the queue."
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var targets: TargetOptions
    @OptionGroup var policy: PolicyOptions
    @Flag(help: "Ignore backoff: retry failed messages now.") var now = false
    @Flag(help: "Redrive dead messages to queued (history kept, attempts reset).") var dead = false
    @Option(help: "Retry at most this many messages.") var limit: Int?

    func run() throws {
        let stopping = Stopping()
        defer { stopping.end() }
        let session = try global.session()
        let (ids, badLines) = try targets.resolve()
        if dead {
            let writer = NDJSONWriter()
            writer.flushEveryLine = false
            let moved = try Redrive.run(store: try session.store(), targets: ids, now: .now()) { (r) throws(MsgError) in try writer.writeWithoutHistory(r) }
            try writer.finish()
            if moved > 0 { Diagnostics.say("redrove \(moved) dead message\(moved == 1 ? "" : "s") to queued") }
            try finish(badLines > 0 ? 65 : 0)
            return
        }
        var options = try policy.options(statuses: [.failed])
        options.targets = ids
        options.limit = limit
        options.ignoreDue = now
        let summary = try Flusher(store: try session.store(.send), transport: try session.transport(), policy: try policy.policy(),
                                  options: options, faults: try FaultPoints(), stop: stopping.request).run(progress: Progress("retried"))
        if summary.skipped > 0 { Diagnostics.say("\(summary.skipped) of the given messages were not failed and due") }
        if let stopped = summary.stopped {
            if stopped != .closedOutput, let line = summary.stopLine { Diagnostics.say(line) }
            try finish(stopped.exitStatus)
        }
        if let line = summary.failureLine { Diagnostics.say(line) }
        try finish(badLines > 0 ? 65 : summary.exitCode)
    }
}

/// What `flush` and `retry` hold while they run: SIGINT and SIGTERM blocked (asked
/// for between transport calls) and SIGPIPE ignored (a closed standard output
/// becomes EPIPE, a stop request like a signal), so that nothing is left `sending`.
final class Stopping {
    let request = StopRequest()
    private let signals = StopSignals()
    private let pipe = signal(SIGPIPE, SIG_IGN)

    /// Puts both back. A signal still pending is delivered now, and ends the
    /// process as it would have at once.
    func end() {
        signal(SIGPIPE, pipe)
        signals.restore()
    }
}
