import ArgumentParser
import MsgEngine
import MsgKit

/// `msg flush`: sends due queued messages in FIFO order.
struct FlushCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "flush",
        abstract: "Send due messages, in order per destination; print each record.",
        discussion: """
        Each batch is recorded as sending (under a lease) before the transport is
        called, and as sent only after it reports delivery. Destinations (--key) go
        out --concurrency at a time, each one message at a time in FIFO order, with
        an optional --rate and a circuit breaker (--breaker). Exit 1 when a message
        became dead, 75 when one was deferred or held back for a later run.
        """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var targets: TargetOptions
    @OptionGroup var match: MatchOptions
    @OptionGroup var policy: PolicyOptions
    @Option(parsing: .unconditional, help: "Send at most this many messages.", transform: ArgumentValue.count(from: 1)) var limit: Int?
    @Flag(help: "Keep running: send what becomes due; stop on SIGINT or SIGTERM.") var watch = false
    @OptionGroup var eventOptions: EventOptions
    @OptionGroup var checkpoint: CheckpointOptions
    @Option(help: ArgumentHelp("With --watch: serve the queue's metrics (as msg metrics) at http://ADDR/metrics; loopback unless another address is given.", valueName: "host:port"),
            transform: ArgumentValue.metricsAddress)
    var metrics: MetricsAddress?
    @Option(name: .customLong("inbox"), help: ArgumentHelp("Take this application's inbox into the queue before sending (with --watch: whenever rows come in); repeatable. See msg-inbox(1).", valueName: "url"))
    var inboxes: [String] = []

    func validate() throws {
        if metrics != nil && !watch { throw ValidationError("--metrics serves while --watch runs; for one reading use msg metrics") }
        // A filter chooses among the messages there are when the run starts; a watch
        // sends what becomes due later too.
        if watch && match.isGiven { throw ValidationError("--watch sends every message that becomes due; a filter (--to, --header…) is for one run") }
    }

    func run(_ session: Session) throws {
        // Before the transport starts any thread: they must inherit the blocked signals.
        let stopping = Stopping()
        defer { stopping.end() }
        var (ids, badLines) = try targets.resolve(session, .send)
        if try nothingGiven(ids, badLines: badLines, session) { return }
        // With a filter: what it matches among the queued messages (or the ids given).
        let explicit = ids != nil
        ids = try match.narrow(ids, statuses: [.queued], in: session.store(.send))
        if try noneMatch(ids, filtered: match.isGiven, verb: "flush", badLines: badLines, session) { return }
        let events = try eventOptions.sink(session)
        defer { events?.close() }
        let checkpointSeed = try checkpoint.key()
        let runPolicy = policy.policy(session.settings.retry)
        // A watch is the whole service: it sends what is queued and retries what
        // failed when its next attempt is due, under the same per-destination rules.
        var options = policy.options(statuses: watch ? [.queued, .failed] : [.queued], policy: runPolicy, settings: session.settings)
        options.targets = ids
        options.limit = limit
        // A watch says no summary per run: what waits for held destinations is not counted.
        options.countsHeld = !watch
        options.leavesScanHint = !watch
        // On a terminal, the progress line and the summary instead of the records.
        let console = session.console.forRecordsOfARun
        let flusher = Flusher(store: try session.store(.send), transport: try session.transport(), policy: runPolicy,
                              options: options, faults: try FaultPoints(), console: console, stop: stopping.request,
                              openTransport: { () throws(MsgError) in try session.anotherTransport() }, events: events)
        flusher.watchSections(session.settings.sections)
        if watch {
            // A daemon rides out a store that goes away (a PostgreSQL restart): it waits and goes on.
            flusher.outage = StoreOutage(store: session.settings.store, stop: stopping.request, reporter: session.reporter)
            // A daemon's journal: failures and recoveries as they happen, a few a minute per destination.
            flusher.outcomeLog = OutcomeLog()
        }
        // The store's own inbox (PostgreSQL's msg.inbox) and those named: taken in first.
        let inboxes = try Inboxes(self.inboxes, storeURL: session.settings.store, loader: session.loader,
                                  refused: session.refusedDrafts, faults: try FaultPoints(), reporter: session.reporter)
        if !watch { try inboxes.drain() }
        let server = try metrics.map { (address) throws(MsgError) in
            try MetricsServer(address: address, render: MetricsServer.storeMetrics(try session.loader.openStore(session.settings.store, access: .read)),
                              reporter: session.reporter, loader: session.loader)
        }
        defer { server?.stop() }
        let summary = watch ? try Watcher().run(flusher, inboxes: inboxes) : try flusher.run(progress: console.progress("flushed"))
        try RunEnding(taking: .queued, notDue: "", other: [.failed: "msg retry sends failed ones"], explicit: explicit,
                      badLines: badLines, watch: watch, onTerminal: session.console.outputIsTerminal)
            .end(summary, session, checkpoint: checkpoint, seed: checkpointSeed)
    }
}

/// Ends a `flush` or `retry` whose filter matched nothing: "0 messages match".
/// - Returns: false when there are messages to act on.
func noneMatch(_ ids: [String]?, filtered: Bool, verb: String, badLines: Int, _ session: Session) throws -> Bool {
    guard filtered, let ids, ids.isEmpty else { return false }
    session.reporter.say("\(verb): 0 messages match")
    try finish(badLines > 0 ? 65 : 0)
    return true
}
