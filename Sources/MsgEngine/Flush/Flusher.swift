#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport
import Synchronization

/// `flush` and `retry`: takes due messages under a lease, records `sending`
/// durably, delivers them per destination, and records each outcome
/// (docs/DESIGN.md 6).
///
/// One thread claims (``Claimer``) and records outcomes (``OutcomeDesk``, their
/// one owner), as the run's state machine (``FlushRun``) says; the delivery
/// workers (``Dispatcher``) take slices of what was claimed, each destination's in
/// FIFO order, and hand back outcomes. Per batch there are two
/// store commits (the claim, the outcomes), so the cost per message is close to the
/// transport's own. A message is attempted at most once per run.
public final class Flusher {
    /// What to send and how.
    public struct Options: Sendable {
        /// The statuses taken: `queued` for flush, `failed` for retry.
        public var statuses: Set<Status> = [.queued]
        /// Only these ids (from arguments or stdin); nil for all.
        public var targets: [String]?
        /// At most this many messages.
        public var limit: Int?
        /// Ignore `not_before` and `next_attempt_at` (`retry --now`).
        public var ignoreDue = false
        /// The deadline of each attempt.
        public var deadline = MsgDuration.seconds(3)
        /// Messages per batch (one claim commit, one outcome commit).
        public var batchSize = 1024
        /// Delivery workers: destinations in flight at once.
        public var concurrency = 1
        /// Destinations with delivery workers of their own (the config file's
        /// `[destination PATTERN]` sections that set `deadline` or `concurrency`): a
        /// message goes to the first whose pattern matches its recipient, else to
        /// the run's own workers (``deadline``, ``concurrency``).
        public var lanes: [Lane] = []
        /// The destinations matching `pattern` (fnmatch(3)), their deadline and workers.
        public struct Lane: Sendable, Equatable {
            public var pattern: String
            public var deadline: MsgDuration
            public var concurrency: Int
            public init(pattern: String, deadline: MsgDuration, concurrency: Int) {
                self.pattern = pattern
                self.deadline = deadline
                self.concurrency = concurrency
            }
        }
        /// The longest deadline of an attempt in the run (a claim's lease covers it).
        public var longestDeadline: MsgDuration { lanes.map(\.deadline).reduce(deadline, max) }
        /// Keys, throttle, breaker.
        public var rules = DeliveryRules()
        /// The longest a run waits for a throttled or paused destination before it
        /// ends and leaves its messages queued.
        public var maxWait = MsgDuration.seconds(60)
        /// At most this many messages a period for the whole run (`retry --pace`), so
        /// a redrive of thousands is spread out rather than sent at once; the run
        /// waits for each token, however long.
        public var pace: Rate?
        /// Count, for the summary, every message that waits for a held destination
        /// (from the store's tally: one read of it a run). `flush --watch`, which says
        /// no summary per run, leaves it off: a tally read after a million adds cost
        /// each run a few milliseconds of its log.
        public var countsHeld = true
        /// Leave where the scan stopped in the store for the next run of another
        /// process (``ScanHint``): one-shot `flush` and `retry`; a watch keeps its scan.
        public var leavesScanHint = false
        public init() {}
    }

    /// The store as opened, and as this run uses it: through the outage when there
    /// is one (``OutageRidingStore``).
    private let opened: any Store
    private(set) var store: any Store
    /// The claims' place in the queue, kept from one run to the next (``run(progress:)``).
    private var scan = ClaimScan()
    let transport: any Transport
    let openTransport: (() throws(MsgError) -> any Transport)?
    let policy: RetryPolicy
    let options: Options
    /// Where the run prints and what stops it: records to the console's output
    /// (through one writer), what the user should know to its reporter, state changes
    /// worth telling to `events` (`--events`, `--on-event`), if anywhere.
    struct Speech {
        let console: Console
        let writer: NDJSONWriter
        let stop: StopRequest
        let events: EventSink?
    }
    /// What tests inject: faults, the clock, sleep, and a random number in [0, 1)
    /// for jitter.
    struct Injected {
        let faults: FaultPoints
        let clock: @Sendable () -> Timestamp
        let sleep: @Sendable (MsgDuration) -> Void
        let unit: @Sendable () -> Double
    }
    let speech: Speech
    let injected: Injected

    var console: Console { speech.console }
    var writer: NDJSONWriter { speech.writer }
    var reporter: Reporter { speech.console.reporter }
    var stop: StopRequest { speech.stop }
    var events: EventSink? { speech.events }
    var faults: FaultPoints { injected.faults }
    var clock: @Sendable () -> Timestamp { injected.clock }
    var sleep: @Sendable (MsgDuration) -> Void { injected.sleep }
    var unit: @Sendable () -> Double { injected.unit }
    /// Rides out a store that cannot be reached (`flush --watch`): every store call
    /// goes through it (``OutageRidingStore``), a claim made again whole with its
    /// planner afresh; nil: the store's error ends the run.
    public var outage: StoreOutage? {
        didSet { store = outage.map { OutageRidingStore(opened, outage: $0) } ?? opened }
    }
    /// The config file's sections to say once when no message matched them
    /// (``watchSections(_:)``); nil: not looked at.
    private var unmatched: UnmatchedSections?

    /// Says once, after the first run that claims anything, which of `sections`
    /// matched none of its messages and no destination the store knows.
    public func watchSections(_ sections: [DestinationSection]) {
        unmatched = sections.contains { $0.line > 0 } ? UnmatchedSections(sections) : nil
    }

    /// Tells failures, dead messages and recoveries on stderr as they happen
    /// (`flush --watch`, for the journal); nil: the run's summary tells them.
    public var outcomeLog: OutcomeLog?

    /// A flusher; `clock`, `sleep` and `unit` (a random number in [0, 1), for jitter)
    /// are injected so tests control time. `stop` is asked between transport calls.
    /// `openTransport` opens one more transport for each delivery worker past the
    /// first. Records go to the console's output, what the user should know to its
    /// reporter.
    public init(store: any Store, transport: any Transport, policy: RetryPolicy, options: Options,
                faults: FaultPoints, console: Console, stop: StopRequest = StopRequest(),
                openTransport: (() throws(MsgError) -> any Transport)? = nil,
                clock: @escaping @Sendable () -> Timestamp = { Timestamp.now() },
                sleep: @escaping @Sendable (MsgDuration) -> Void = { usleep(useconds_t(max(0, $0.milliseconds) * 1000)) },
                unit: (@Sendable () -> Double)? = nil, events: EventSink? = nil) {
        opened = store
        self.store = store
        self.transport = transport
        self.openTransport = openTransport
        self.policy = policy
        self.options = options
        speech = Speech(console: console, writer: console.writer(), stop: stop, events: events)
        // Jitter needs no cryptographic randomness: one seed, then a fast generator
        // (behind a lock, as the delivery threads draw from it).
        let rng = Mutex(SplitMix64(seed: UInt64.random(in: 0...UInt64.max)))
        injected = Injected(faults: faults, clock: clock, sleep: sleep, unit: unit ?? { rng.withLock { $0.unit() } })
    }

    /// Sends everything due now, until done or asked to stop.
    /// - Throws: store errors; a transport that cannot be opened for a worker.
    ///
    /// The run's decisions are its state machine's (``FlushRun``): claim a batch and
    /// hand it to the workers; record the outcomes as they come back, putting back
    /// what waits for a destination whose breaker opened or that asked for a pause;
    /// wait for a destination due within the run's patience. On a stop request,
    /// nothing more is claimed and what was claimed but not attempted goes back
    /// exactly as it was. The lessons of the last outcomes are stored before it ends.
    /// `countingMessages`: the summary keeps which messages were left failing, for
    /// runs added together (``Watcher``) to count messages, not attempts.
    public func run(progress: Progress? = nil, countingMessages: Bool = false) throws(MsgError) -> Summary {
        let started = clock()
        if scan.isFresh, let kind = ScanHint.kind(options), let hints = store.capabilities.journal,
           let text = try hints.scanHint(kind) {
            _ = try ScanHint.adopt(text, into: &scan, now: started, floors: hints)
        }
        let claimer = Claimer(store: store, options: options, faults: faults, clock: clock, outage: outage)
        var machine = FlushRun(batchSize: options.batchSize, limit: options.limit, maxWait: options.maxWait, pace: options.pace, scan: scan,
                               rules: options.rules, countsPerKey: claimer.maxPerKey != nil)
        // A run that ends early leaves a scan this one cannot vouch for.
        scan = ClaimScan()
        let desk = OutcomeDesk(store: store, rules: options.rules, faults: faults, clock: clock, writer: writer,
                               reporter: reporter, events: events, outcomeLog: outcomeLog, stop: stop)
        defer { outcomeLog = desk.outcomeLog }
        defer { progress?.finish() }
        if let progress, progress.isShown { progress.total = try dueCount() }
        let misconfigured = FirstError()
        let lanes = try self.lanes()
        let patterns = lanes.count == 1 ? [] : options.lanes.map(\.pattern)
        let dispatcher = Dispatcher(lanes: lanes, lane: { item in
            patterns.isEmpty ? 0 : RoutingTransport.route(of: item.record.to, patterns: patterns).map { $0 + 1 } ?? 0
        }, delivery: Dispatcher.Delivery(
            policy: policy, faults: faults, clock: clock, unit: unit, deadline: options.deadline, batchSize: options.batchSize,
            stop: stop, misconfigured: misconfigured, progress: progress, delivered: Counter(), ledger: store.capabilities.journal != nil))
        defer { dispatcher.close() }
        var summary = Summary()
        if countingMessages { summary.left = MessagesLeft() }
        let shell = Shell(claimer: claimer, journal: store.capabilities.journal, desk: desk, dispatcher: dispatcher, misconfigured: misconfigured)
        while try step(&machine, shell, into: &summary) {}
        try end(&machine, shell, started: started, into: &summary)
        scan = machine.scan
        if let line = unmatched?.line(store) { reporter.say(line) }
        return summary
    }

    /// The run's lanes: its own workers, then those of each of ``Options/lanes``, a
    /// transport each (the run's, and one more for each worker past the first).
    /// Without a way to open more there is one worker, and one lane.
    private func lanes() throws(MsgError) -> [Dispatcher.Lane] {
        guard let openTransport else { return [Dispatcher.Lane(transports: [transport], deadline: options.deadline)] }
        var lanes: [Dispatcher.Lane] = []
        for (concurrency, deadline) in [(options.concurrency, options.deadline)] + options.lanes.map({ ($0.concurrency, $0.deadline) }) {
            var transports: [any Transport] = lanes.isEmpty ? [transport] : []
            while transports.count < concurrency { transports.append(try openTransport()) }
            lanes.append(Dispatcher.Lane(transports: transports, deadline: deadline))
        }
        return lanes
    }

    /// What carries out a run's actions: the claim, the store's journal (floors and hints; read once a
    /// run), the outcomes' desk, the delivery workers, the first misconfiguration a
    /// worker met.
    private struct Shell {
        let claimer: Claimer
        let journal: (any JournalStore)?
        let desk: OutcomeDesk
        let dispatcher: Dispatcher
        let misconfigured: FirstError
    }

    /// Does what the run's state machine says next, and tells it what came of it.
    /// - Returns: false when the run is over.
    private func step(_ machine: inout FlushRun, _ shell: Shell, into summary: inout Summary) throws(MsgError) -> Bool {
        switch machine.next(now: clock(), stopAsked: stop.reason != nil || shell.misconfigured.error != nil) {
        case .withdrawAll:
            let back = shell.dispatcher.withdrawAll()
            machine.withdrew(back)
            summary.released += try shell.desk.putBack(back)
        case .claim(let limit):
            let round = try claim(limit, &machine, shell, into: &summary)
            summary.damaged += round.damaged
            if !round.expired.isEmpty { shell.desk.expired(round.expired, into: &summary) }
            unmatched?.saw(round.taken)
            shell.dispatcher.add(round.taken)
        case .wait(let until):
            waitUntil(until)
        case .receive(let until):
            guard let outcome = shell.dispatcher.receive(milliseconds: until.map { $0.milliseconds - clock().milliseconds }) else {
                machine.timedOut()
                return true
            }
            try shell.desk.settle(outcome, shell.dispatcher, run: &machine, into: &summary)
        case .finish:
            return false
        }
        return true
    }

    /// One claim as the run's state machine has it: the scan started again where it
    /// says (asking the store about other processes' commits), the claim, and after
    /// an outage the messages it left `sending` and never handed out put back.
    private func claim(_ limit: Int, _ machine: inout FlushRun, _ shell: Shell, into summary: inout Summary) throws(MsgError) -> Claimer.Round {
        var start = machine.claimStarts(token: try store.changeToken(), now: clock(), floors: shell.journal != nil)
        while case .askFloor(let since) = start, let journal = shell.journal {
            start = machine.floorAnswered(try journal.changeFloor(since: since), since: since)
        }
        let round = machine.claimFindsNothing(limit) ? Claimer.Round()
            : try shell.claimer.claim(limit: limit, notes: machine.notes, scan: machine.scan)
        machine.claimed(round)
        if shell.claimer.outageEnded() { try shell.claimer.putBackOrphans(own: machine.storeCameBack()) }
        say(round, into: &summary)
        return round
    }

    /// The end of a run: its lessons stored, where the next run starts, what held
    /// messages back, the scan's hint, the given ids not taken.
    private func end(_ machine: inout FlushRun, _ shell: Shell, started: Timestamp, into summary: inout Summary) throws(MsgError) {
        // What the last outcomes taught goes into the store now, not at the next run:
        // a claim of nothing.
        if machine.hasLessons { _ = try claim(0, &machine, shell, into: &summary) }
        // The scan is kept for the next run (`flush --watch`: a run a second, and one
        // a change), which goes on where this one stopped and starts again from the
        // first message only when a hold may have ended, another process changed the
        // queue or a time came: with a million waiting behind held destinations, a
        // run that starts again walks past them all (150 ms). A message that became
        // due since this run started (a retry's time, set by its outcomes) may lie
        // behind the scan: its time is one that starts it again.
        if !options.ignoreDue, let due = try store.nextDue(options.statuses, after: Timestamp(milliseconds: started.milliseconds - 1)) {
            machine.becomesDue(due)
        }
        try summarize(shell.claimer, machine.scan, remaining: machine.remaining, into: &summary)
        if let error = shell.desk.outputError { throw error }
        summary.misconfigured = shell.misconfigured.error
        summary.stopped = stop.reason
        if options.leavesScanHint, let kind = ScanHint.kind(options), let hints = shell.journal,
           let mark = machine.hintMark(endedEarly: summary.misconfigured != nil || summary.stopped != nil) {
            // Only a shortcut: a hint that cannot be saved costs the next run a walk,
            // and is no reason to fail a run whose every outcome is stored.
            do { try hints.saveScanHint(kind, ScanHint.text(machine.scan, mark: mark)) } catch {}
        }
        if let targets = options.targets {
            summary.notTaken = targets.filter { !shell.claimer.took($0) }
        }
    }

    /// How many messages are due now (the progress line's total).
    private func dueCount() throws(MsgError) -> Int {
        var due = Query(statuses: options.statuses, dueBy: options.ignoreDue ? nil : clock(), ids: options.targets.map(Set.init))
        due.limit = options.limit
        return try store.count(due)
    }

    /// Says lines on stderr and keeps them in the summary.
    private func say(_ round: Claimer.Round, into summary: inout Summary) {
        summary.notices += round.notices
        for line in round.notices { reporter.say(line) }
        for event in round.events { events?.emit(event) }
    }

    /// Waits until `until` on the injected clock, or a stop request.
    func waitUntil(_ until: Timestamp) {
        while stop.reason == nil {
            let left = until.milliseconds - clock().milliseconds
            if left <= 0 { return }
            sleep(MsgDuration(milliseconds: min(left, 100)))
        }
    }

    /// The earliest time a message this command takes becomes due, if any is waiting.
    public func nextDue() throws(MsgError) -> Timestamp? {
        try store.nextDue(options.statuses, after: clock())
    }

    /// The store's change token (``Store/changeToken()``), through the outage when there is one.
    public func changeToken() throws(MsgError) -> UInt64? {
        try store.changeToken()
    }

    /// The destinations that held messages back, one line each (breaker open,
    /// paused, throttled past the run's patience), with how many wait.
    private func summarize(_ claimer: Claimer, _ scan: ClaimScan, remaining: Int, into summary: inout Summary) throws(MsgError) {
        for (key, hold, n) in try claimer.holds(scan) {
            let messages = "\(n) message\(n == 1 ? "" : "s") wait"
            switch hold {
            case .open(let until):
                summary.heldBack += n
                summary.holds.append("destination \(key): circuit open until \(until); \(messages) without an attempt counted")
            case .suspended(let until):
                summary.heldBack += n
                summary.holds.append("destination \(key): suspended " + (until.map { "until \($0)" } ?? "until msg destinations resume") + "; \(messages)")
            case .paused(let until) where remaining > 0:
                summary.heldBack += n
                summary.holds.append("destination \(key): paused until \(until), as it asked; \(messages)")
            case .throttled(let until) where remaining > 0 && stop.reason == nil:
                summary.heldBack += n
                summary.holds.append("destination \(key): throttled (\(options.rules.resolved(for: key).rate?.description ?? "")) until \(until); \(messages)")
            default: break
            }
        }
    }
}
