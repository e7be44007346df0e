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
        let session = try global.session()
        let (ids, badLines) = try targets.resolve()
        var options = try policy.options(statuses: [.queued])
        options.targets = ids
        options.limit = limit
        let flusher = Flusher(store: try session.store(.send), transport: try session.transport(), policy: try policy.policy(),
                              options: options, faults: try FaultPoints())
        let summary = watch ? try Watcher().run(flusher) : try flusher.run(progress: Progress("flushed"))
        if !watch, let line = summary.failureLine { Diagnostics.say(line) }
        if !watch && Interruption.requested { Diagnostics.say("interrupted: \(summary.sent) sent; the rest is still queued") }
        if summary.skipped > 0 { Diagnostics.say("\(summary.skipped) of the given messages were not queued and due (see msg retry)") }
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
        let session = try global.session()
        let (ids, badLines) = try targets.resolve()
        if dead {
            let writer = NDJSONWriter()
            let moved = try Redrive.run(store: try session.store(), targets: ids, now: .now()) { (m) throws(MsgError) in try writer.write(m, includeHistory: false) }
            if moved > 0 { Diagnostics.say("redrove \(moved) dead message\(moved == 1 ? "" : "s") to queued") }
            try finish(badLines > 0 ? 65 : 0)
            return
        }
        var options = try policy.options(statuses: [.failed])
        options.targets = ids
        options.limit = limit
        options.ignoreDue = now
        let summary = try Flusher(store: try session.store(.send), transport: try session.transport(), policy: try policy.policy(),
                                  options: options, faults: try FaultPoints()).run(progress: Progress("retried"))
        if let line = summary.failureLine { Diagnostics.say(line) }
        if summary.skipped > 0 { Diagnostics.say("\(summary.skipped) of the given messages were not failed and due") }
        try finish(badLines > 0 ? 65 : summary.exitCode)
    }
}
