import ArgumentParser
import MsgEngine
import MsgKit

/// `msg retry`: re-sends due failed messages, or redrives dead ones.
struct RetryCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Re-send failed messages that are due (--now: all); --dead returns dead ones to the queue."
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var targets: TargetOptions
    @OptionGroup var policy: PolicyOptions
    @OptionGroup var eventOptions: EventOptions
    @OptionGroup var match: MatchOptions
    @Option(help: ArgumentHelp("Spread the retry: at most this many messages per period for the whole run (10/s, 600/m), whatever their destinations (--rate is per destination).", valueName: "rate"))
    var pace: String?
    @Flag(help: "Ignore backoff: retry failed messages now.") var now = false
    @Flag(help: "Redrive dead messages to queued (history kept, attempts reset).") var dead = false
    @Option(parsing: .unconditional, help: "Retry at most this many messages.") var limit: Int?
    @Option(name: .customLong("expires-in"), help: ArgumentHelp("With --dead: the redriven messages' new expiry (a duration such as 1h, or a time); without it an expiry already past is dropped.", valueName: "duration"),
            transform: ArgumentValue.futureTime)
    var expiresAt: Timestamp?

    func validate() throws {
        if let pace { do { _ = try Rate(parsing: pace) } catch { throw ValidationError("--pace: " + error.message) } }
        if pace != nil && dead { throw ValidationError("--pace spreads sending; --dead only queues again (pace the flush that follows)") }
    }

    func run(_ session: Session) throws {
        let stopping = Stopping()
        let events = try eventOptions.sink(session)
        defer { events?.close() }
        defer { stopping.end() }
        var (ids, badLines) = try targets.resolve(session, .send)
        if try nothingGiven(ids, badLines: badLines, session) { return }
        if match.isGiven {
            // What the filter matches among the messages retry takes (or the ids given).
            var listing = match.listing(statuses: dead ? [.dead] : [.failed])
            if let given = ids { listing.query.ids = Set(given) }
            ids = try listing.ids(in: try session.store(.send))
        }
        if dead {
            let writer = session.console.writer()
            writer.flushEveryLine = false
            let (moved, damaged) = try Redrive.run(store: try session.store(), targets: ids, now: .now(), expiresAt: expiresAt) { (r) throws(MsgError) in
                try writer.writeWithoutHistory(r)
            }
            try writer.finish()
            if moved > 0 { session.console.say("redrove \(moved) dead message\(moved == 1 ? "" : "s") to queued") }
            for id in damaged {
                session.console.say("\(id): not redriven: it is a damaged record (msg-record(5), DAMAGED RECORDS); fix the text in its \(Message.damagedRecordKey) field and add it again")
            }
            try finish(badLines > 0 || !damaged.isEmpty ? 65 : 0)
            return
        }
        var options = policy.options(statuses: [.failed])
        options.targets = ids
        options.limit = limit
        options.ignoreDue = now
        options.pace = try pace.map { (text) throws(MsgError) in try Rate(parsing: text) }
        let summary = try Flusher(store: try session.store(.send), transport: try session.transport(), policy: policy.policy(),
                                  options: options, faults: try FaultPoints(), console: session.console, stop: stopping.request,
                                  openTransport: { () throws(MsgError) in try session.anotherTransport() }, events: events)
            .run(progress: session.console.progress("retried"))
        summary.reportHolds(to: session.reporter)
        let noneTaken = try reportNotTaken(summary, session, taking: .failed, notDue: "retry --now sends it now",
                                           other: [.dead: "retry --dead queues it again", .queued: "msg flush sends queued ones"])
        summary.reportDamaged(in: session.settings.store, to: session.reporter)
        if let stopped = summary.stopped {
            if stopped != .closedOutput, let line = summary.stopLine { session.console.say(line) }
            try finish(stopped.exitStatus)
        }
        if let line = summary.failureLine { session.console.say(line) }
        if let error = summary.misconfigured { throw error }
        try finish(badLines > 0 || noneTaken ? 65 : summary.exitCode)
    }
}
