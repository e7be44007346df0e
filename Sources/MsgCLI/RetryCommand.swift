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
    @OptionGroup var checkpoint: CheckpointOptions
    @OptionGroup var match: MatchOptions
    @Option(help: ArgumentHelp("Spread the retry: at most this many messages per period for the whole run (10/s, 600/m), whatever their destinations (--rate is per destination).", valueName: "rate"),
            transform: ArgumentValue.rate)
    var pace: Rate?
    @Flag(help: "Ignore backoff, a pause a destination asked for (429 Retry-After) and an open breaker: retry failed messages now.") var now = false
    @Option(help: "Why; kept in each message's history (the attempt, or with --dead the redrive).") var reason: String?
    @Flag(name: .customLong("dry-run"), help: "Print the messages that would be retried (or redriven) and how many; change nothing.") var dryRun = false
    @Flag(help: "Redrive dead messages to queued (history kept, attempts reset).") var dead = false
    @Option(parsing: .unconditional, help: "Retry at most this many messages.", transform: ArgumentValue.count(from: 1)) var limit: Int?
    @Option(name: .customLong("expires-in"), help: ArgumentHelp("With --dead: the redriven messages' new expiry (a duration such as 1h, or a time); without it an expiry already past is dropped.", valueName: "duration"),
            transform: ArgumentValue.futureTime)
    var expiresAt: Timestamp?

    func validate() throws {
        if pace != nil && dead { throw ValidationError("--pace spreads sending; --dead only queues again (pace the flush that follows)") }
        if let reason, reason.utf8.count > 1024 { throw ValidationError("--reason is \(reason.utf8.count) bytes; at most 1024") }
    }

    func run(_ session: Session) throws {
        let stopping = Stopping()
        let events = try eventOptions.sink(session)
        defer { events?.close() }
        defer { stopping.end() }
        var (ids, badLines) = try targets.resolve(session, .send)
        if try nothingGiven(ids, badLines: badLines, session) { return }
        // With a filter: what it matches among the messages retry takes (or the ids given).
        let explicit = ids != nil
        ids = try match.narrow(ids, statuses: dead ? [.dead] : [.failed], limit: dead ? limit : nil, in: session.store(.send))
        if try noneMatch(ids, filtered: match.isGiven, verb: "retry", badLines: badLines, session) { return }
        if dryRun {
            // What the store would give this run (a destination's rules may still hold some back).
            var query = Query(statuses: dead ? [.dead] : [.failed], dueBy: dead || now ? nil : .now(), limit: limit)
            query.ids = ids.map(Set.init)
            let formatter = RecordFormatter(format: .ndjson, includeHistory: false, output: session.console.buffer(), width: nil)
            try Listing(query: query).write(from: session.store(.read), formatter: formatter, includeHistory: false)
            let n = min(limit ?? .max, try Listing(query: query).count(in: session.store(.read)))
            session.reporter.say("dry run: would \(dead ? "redrive" : "retry") \(n) message\(n == 1 ? "" : "s"); nothing changed")
            return try finish(badLines > 0 ? 65 : 0)
        }
        // On a terminal, the progress line and the summary instead of the records.
        let console = session.console.forRecordsOfARun
        if dead {
            let writer = console.writer()
            writer.flushEveryLine = false
            let (moved, damaged) = try Redrive.run(store: try session.store(), targets: ids.map { Array($0.prefix(limit ?? .max)) }, limit: limit ?? .max,
                                                        now: .now(), expiresAt: expiresAt, reason: reason) { (r) throws(MsgError) in
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
        let checkpointSeed = try checkpoint.key()
        let runPolicy = policy.policy(session.settings.retry)
        var options = policy.options(statuses: [.failed], policy: runPolicy, settings: session.settings)
        options.targets = ids
        options.limit = limit
        options.ignoreDue = now
        options.rules.overridesWaits = now
        options.rules.reason = reason
        options.pace = pace
        options.leavesScanHint = true
        let flusher = Flusher(store: try session.store(.send), transport: try session.transport(), policy: runPolicy,
                              options: options, faults: try FaultPoints(), console: console, stop: stopping.request,
                              openTransport: { () throws(MsgError) in try session.anotherTransport() }, events: events)
        flusher.watchSections(session.settings.sections)
        let summary = try flusher.run(progress: console.progress("retried"))
        try RunEnding(taking: .failed, notDue: "retry --now sends it now",
                      other: [.dead: "retry --dead queues it again", .queued: "msg flush sends queued ones"], explicit: explicit,
                      badLines: badLines, onTerminal: session.console.outputIsTerminal)
            .end(summary, session, checkpoint: checkpoint, seed: checkpointSeed)
    }
}
