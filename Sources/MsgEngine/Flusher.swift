#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import Dispatch
import Synchronization
import MsgKit
import MsgSupport

/// `flush` and `retry`: takes due messages under a lease, records `sending`
/// durably, delivers them per destination, and records each outcome
/// (docs/DESIGN.md 6).
///
/// Per batch there are two store commits (the claim, the outcomes), so the cost per
/// message is close to the transport's own. A message is attempted at most once
/// per run. Destinations (``DeliveryRules/key``) go in parallel, `concurrency` at
/// once, each in FIFO order with one message in flight, throttled and guarded by a
/// circuit breaker whose state lives in the store.
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
        /// Keys, throttle, breaker.
        public var rules = DeliveryRules()
        /// The longest a run waits for a throttled or paused destination before it
        /// ends and leaves its messages queued.
        public var maxWait = MsgDuration.seconds(60)
        public init() {}
    }

    let store: any Store
    let transport: any Transport
    let openTransport: (() throws(MsgError) -> any Transport)?
    let policy: RetryPolicy
    let options: Options
    let faults: FaultPoints
    let writer: NDJSONWriter
    let stop: StopRequest
    let clock: @Sendable () -> Timestamp
    let sleep: @Sendable (MsgDuration) -> Void
    let unit: @Sendable () -> Double
    var attempted: Set<String> = []
    var damaged: [String] = []
    /// A `config` outcome: the transport cannot deliver as configured; the run stops.
    let misconfigured = FirstError()

    /// Per run: what is claimed and not yet recorded, by id and per key.
    var inFlight: Set<String> = []
    var pendingPerKey: [String: Int] = [:]
    /// Outcomes not yet applied to the stored destination states, and the states
    /// as of the last claim with them applied.
    var events: [(key: String, event: DestinationPlanner.Event)] = []
    var mirror: [String: DestinationState] = [:]
    /// Keys whose claimed message is a half-open probe.
    var probes: Set<String> = []
    /// Keys that failed lately, handed out one message at a time (``KeyScheduler``).
    var cautious: Set<String> = []

    /// A flusher; `clock`, `sleep` and `unit` (a random number in [0, 1), for jitter)
    /// are injected so tests control time. `stop` is asked between transport calls.
    /// `openTransport` opens one more transport for each delivery worker past the first.
    public init(store: any Store, transport: any Transport, policy: RetryPolicy, options: Options,
                faults: FaultPoints, writer: NDJSONWriter = NDJSONWriter(), stop: StopRequest = StopRequest(),
                openTransport: (() throws(MsgError) -> any Transport)? = nil,
                clock: @escaping @Sendable () -> Timestamp = { Timestamp.now() },
                sleep: @escaping @Sendable (MsgDuration) -> Void = { usleep(useconds_t(max(0, $0.milliseconds) * 1000)) },
                unit: (@Sendable () -> Double)? = nil) {
        self.store = store
        self.stop = stop
        self.transport = transport
        self.openTransport = openTransport
        self.policy = policy
        self.options = options
        self.faults = faults
        self.writer = writer
        self.clock = clock
        self.sleep = sleep
        if let unit {
            self.unit = unit
        } else {
            // Jitter needs no cryptographic randomness: one seed, then a fast generator
            // (behind a lock, as the delivery threads draw from it).
            let rng = Mutex(SplitMix64(seed: UInt64.random(in: 0...UInt64.max)))
            self.unit = { rng.withLock { $0.unit() } }
        }
    }

    /// The most messages claimed and not yet recorded.
    var maxPending: Int { options.batchSize * 2 }
    /// The most of them for one destination; nil when that is all of them (one worker).
    var maxPerKey: Int? { options.concurrency > 1 ? max(1, maxPending / options.concurrency) : nil }

    /// Sends everything due now, until done or asked to stop.
    /// - Throws: store errors; a transport that cannot be opened for a worker.
    ///
    /// This thread claims (recording `sending`) and records outcomes; `concurrency`
    /// delivery threads, each with a transport of its own, take slices of the claimed
    /// messages per destination (``KeyScheduler``), hand them to the transport and
    /// work out their outcomes. Claims run ahead of delivery by up to two batches.
    ///
    /// A worker hands over slices sized to take about 250 ms each (``SliceSizer``) and
    /// asks `stop` between them. Once asked, nothing more is claimed, the outcomes of
    /// the slices in flight are recorded, and every message claimed but not attempted
    /// is put back exactly as it was before its claim.
    public func run(progress: Progress? = nil) throws(MsgError) -> Summary {
        attempted = []
        damaged = []
        inFlight = []
        pendingPerKey = [:]
        probes = []
        cautious = []
        misconfigured.clear()
        outputError = nil
        defer { progress?.finish() }
        if let progress, progress.isShown {
            // What is due now, so the line says how far along the run is.
            var due = Query(statuses: options.statuses, dueBy: options.ignoreDue ? nil : clock(), ids: options.targets.map(Set.init))
            due.limit = options.limit
            progress.total = try store.count(due)
        }
        var transports = [transport]
        if let openTransport {
            while transports.count < options.concurrency { transports.append(try openTransport()) }
        }
        let scheduler = KeyScheduler(workers: transports.count)
        let results = Channel<Outcomes>(capacity: transports.count + 1)
        let workers = DispatchGroup()
        let delivered = Counter()
        for t in transports { startWorker(SerializedTransport(t), scheduler, results, workers, progress, delivered) }
        defer {
            // Also when a store error ends the run: a worker blocked handing back its
            // outcomes is let go (they are dropped; its messages stay `sending` for
            // recover, as after a crash).
            scheduler.close()
            results.close()
            workers.wait()
        }
        var summary = Summary()
        var remaining = options.limit ?? Int.max
        var pending = 0
        var exhausted = false
        var claimAgain = true
        var wake: Timestamp?
        var lastHolds: [String: DestinationPlanner.Hold] = [:]
        var heldCount: [String: Int] = [:]
        while true {
            if !exhausted && (stop.reason != nil || misconfigured.error != nil) {
                exhausted = true
                let back = scheduler.withdrawAll()
                pending -= back.count
                try putBack(back, into: &summary, counted: true)
            }
            if !exhausted && claimAgain && remaining > 0 && pending <= maxPending / 2 {
                let round = try claim(limit: min(options.batchSize, remaining, maxPending - pending))
                summary.notices += round.notices
                for line in round.notices { Diagnostics.say(line) }
                lastHolds = round.held
                heldCount = round.heldCount
                wake = round.wake
                try recordExpired(round.expired, into: &summary)
                remaining -= round.taken.count + round.expired.count
                if round.taken.isEmpty && round.expired.isEmpty {
                    claimAgain = false
                } else {
                    pending += round.taken.count
                    scheduler.add(round.taken)
                    continue
                }
            }
            if pending == 0 {
                guard !exhausted, remaining > 0, let until = wake else { break }
                let wait = until.milliseconds - clock().milliseconds
                if wait > options.maxWait.milliseconds { break }
                waitUntil(until)
                wake = nil
                claimAgain = true
                continue
            }
            let outcome: Outcomes?
            if let until = wake, !exhausted {
                outcome = results.receive(milliseconds: until.milliseconds - clock().milliseconds)
                if outcome == nil {
                    wake = nil
                    claimAgain = true
                    continue
                }
            } else {
                outcome = results.receive()
            }
            guard let outcome else { continue }
            pending -= outcome.changes.count
            try record(outcome, into: &summary, scheduler)
            // A destination whose breaker opened or that asked for a pause: what waits
            // for it goes back to the queue untouched.
            for key in outcome.failedKeys where isHeld(key) {
                let back = scheduler.withdraw(key)
                pending -= back.count
                try putBack(back, into: &summary, counted: false)
            }
            scheduler.done(outcome.failedKeys)
            claimAgain = true
        }
        // What the last outcomes taught goes into the store now, not at the next run.
        if !events.isEmpty {
            let notices = try claim(limit: 0).notices
            summary.notices += notices
            for line in notices { Diagnostics.say(line) }
        }
        for (key, hold) in lastHolds.sorted(by: { $0.key < $1.key }) {
            let n = heldCount[key] ?? 0
            switch hold {
            case .open(let until):
                summary.heldBack += n
                summary.holds.append("destination \(key): circuit open until \(until); \(n) message\(n == 1 ? "" : "s") wait without an attempt counted")
            case .paused(let until) where remaining > 0:
                summary.heldBack += n
                summary.holds.append("destination \(key): paused until \(until), as it asked; \(n) message\(n == 1 ? "" : "s") wait")
            case .throttled(let until) where remaining > 0 && stop.reason == nil:
                summary.heldBack += n
                summary.holds.append("destination \(key): throttled (\(options.rules.rate?.description ?? "")) until \(until); \(n) message\(n == 1 ? "" : "s") wait")
            default: break
            }
        }
        if let outputError { throw outputError }
        summary.misconfigured = misconfigured.error
        summary.stopped = stop.reason
        summary.damaged = damaged
        if let targets = options.targets {
            summary.notTaken = targets.filter { !attempted.contains($0) }
            summary.skipped = summary.notTaken.count
        }
        return summary
    }

    /// Waits until `until` on the injected clock, or a stop request.
    func waitUntil(_ until: Timestamp) {
        while stop.reason == nil {
            let left = until.milliseconds - clock().milliseconds
            if left <= 0 { return }
            sleep(MsgDuration(milliseconds: min(left, 100)))
        }
    }

    /// Whether what waits for `key` must go back: its breaker is open or it is paused.
    func isHeld(_ key: String) -> Bool {
        guard let s = mirror[key] else { return false }
        let now = clock()
        if let until = s.pausedUntil, until > now { return true }
        if case .open = s.breaker(at: now) { return true }
        return false
    }

    /// The earliest time a message this command takes becomes due, if any is waiting.
    public func nextDue() throws(MsgError) -> Timestamp? {
        var earliest: Timestamp?
        try store.list(Query(statuses: options.statuses, ids: options.targets.map(Set.init))) { (r) throws(MsgError) -> Bool in
            let due = r.message.dueAt ?? r.message.createdAt
            if earliest.map({ due < $0 }) ?? true { earliest = due }
            return true
        }
        return earliest
    }

    /// Records the outcomes of one slice in one commit, learns from them about their
    /// destinations, and prints the records. When standard output fails (closed:
    /// EPIPE, as SIGPIPE is ignored while flushing; or any other error, kept to be
    /// thrown at the end), prints no more and tells `stop`: the outcomes are recorded
    /// all the same and nothing is left `sending`.
    func record(_ outcomes: Outcomes, into summary: inout Summary, _ scheduler: KeyScheduler) throws(MsgError) {
        let changes = outcomes.changes
        let applied = try store.update(changes)
        faults.pass(.afterSent, count: changes.count)
        writer.flushEveryLine = false
        let now = clock()
        for (i, (change, ok)) in zip(changes, applied).enumerated() {
            let key = options.rules.key.of(change.record.message)
            forget(change.record.message.id, key: key)
            guard ok else { continue }
            guard let outcome = outcomes.outcomes[i] else {
                if change.record.message.status == .dead {
                    summary.dead += 1  // expired before its turn
                    summary.lastFailure = change.record.message.lastError
                    writeOut { () throws(MsgError) in try writer.writeRaw(change.record.jsonWithoutHistory) }
                } else {
                    summary.released += 1  // put back as it was: nothing to print
                }
                continue
            }
            learn(outcome, key: key, now: now)
            if case .failed = outcome {
                if cautious.insert(key).inserted { scheduler.setCautious(key, true) }
            } else if !cautious.isEmpty, !outcomes.failedKeys.contains(key), cautious.remove(key) != nil {
                scheduler.setCautious(key, false)
            }
            switch change.record.message.status {
            case .sent, .delivered: summary.sent += 1
            case .dead:
                summary.dead += 1
                summary.lastFailure = change.record.message.lastError
            default:
                summary.deferred += 1
                summary.lastFailure = change.record.message.lastError
            }
            // The record as just stored, without history, from the same encoding.
            writeOut { () throws(MsgError) in try writer.writeRaw(change.record.jsonWithoutHistory) }
        }
        writeOut { () throws(MsgError) in try writer.finish() }
    }

    /// Notes what an outcome says about its destination, for the store (at the next
    /// claim) and for this run at once.
    func learn(_ outcome: DeliveryOutcome, key: String, now: Timestamp) {
        // With every message its own destination there is nothing to learn; nor from a
        // success at a destination with nothing to forget (the common case, kept cheap).
        if options.rules.key == .id { return }
        let probed = !probes.isEmpty && probes.remove(key) != nil
        if case .delivered = outcome, !probed, mirror.isEmpty || (mirror[key]?.isEmpty ?? true) { return }
        var learnt: [DestinationPlanner.Event] = probed ? [.probeReturned] : []
        switch outcome {
        case .delivered: learnt.append(.succeeded)
        case .failed(let error, let retryAfter):
            let failure = Message.Failure(error, at: now)
            if error.code == .rateLimited, let retryAfter { learnt.append(.paused(until: now.adding(RetryPolicy.honoured(retryAfter)))) }
            learnt.append(error.code.isRetryable ? .failed(failure) : .rejected(failure))
        }
        for event in learnt {
            events.append((key, event))
            var s = mirror[key] ?? DestinationState()
            _ = DestinationPlanner.apply(event, to: &s, key: key, now: now, rules: options.rules)
            mirror[key] = s
        }
    }

    /// The first error writing to standard output other than its being closed.
    var outputError: MsgError?

    /// Runs a write to standard output unless it has failed before.
    func writeOut(_ write: () throws(MsgError) -> Void) {
        guard stop.reason != .closedOutput && outputError == nil else { return }
        do throws(MsgError) {
            try write()
        } catch {
            if (error.underlying as? Errno)?.rawValue != EPIPE { outputError = error }
            stop.outputClosed()
        }
    }
}
