#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import Dispatch
import Synchronization
import MsgKit

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

    /// What a run did.
    public struct Summary: Sendable, Equatable {
        public var sent = 0
        public var deferred = 0
        public var dead = 0
        /// Targets that were not in a status this command takes, or not due.
        public var skipped = 0
        /// Their ids, in the order given.
        public var notTaken: [String] = []
        /// Messages claimed but not attempted because of a stop request: put back as
        /// they were before the claim.
        public var released = 0
        /// Why the transport can deliver nothing as configured (a `config` outcome):
        /// the run stopped there and put back what it had not attempted.
        public var misconfigured: MsgError?
        /// Damaged records met (msg-record(5)): set aside as dead, never sent.
        public var damaged: [String] = []
        /// Why the run stopped early, if it did.
        public var stopped: StopRequest.Reason?
        /// The error of the last message deferred or dead, for the one-line summary.
        public var lastFailure: Message.Failure?
        /// Messages left queued because their destination's breaker is open or it
        /// asked for a pause, with one line each about why.
        public var heldBack = 0
        public var holds: [String] = []
        /// Breakers opened and closed, one line each.
        public var notices: [String] = []

        public init(sent: Int = 0, deferred: Int = 0, dead: Int = 0, skipped: Int = 0) {
            self.sent = sent
            self.deferred = deferred
            self.dead = dead
            self.skipped = skipped
        }
        /// Equal counts (the last error is only for display).
        public static func == (a: Summary, b: Summary) -> Bool {
            (a.sent, a.deferred, a.dead, a.skipped) == (b.sent, b.deferred, b.dead, b.skipped)
        }

        /// 1 when a message became dead (a damaged record counts), else 75 when one
        /// was deferred, else 0.
        public var exitCode: Int32 { dead > 0 || !damaged.isEmpty ? 1 : deferred + heldBack > 0 ? 75 : 0 }

        /// Says which damaged records of `store` were met, one line each.
        public func reportDamaged(in store: String, to reporter: Reporter) {
            for id in damaged {
                reporter.say("record \(id) in \(store) is damaged: it was set aside as dead with its text kept, and not sent (msg-record(5), DAMAGED RECORDS)")
            }
        }

        mutating func add(_ other: Summary) {
            sent += other.sent
            damaged += other.damaged
            deferred += other.deferred
            dead += other.dead
            released += other.released
            stopped = other.stopped ?? stopped
            misconfigured = other.misconfigured ?? misconfigured
            lastFailure = other.lastFailure ?? lastFailure
            heldBack = other.heldBack
            holds = other.holds
        }

        /// Says on stderr which destinations held messages back, one line each.
        public func reportHolds() {
            for line in holds { Diagnostics.say(line) }
        }

        /// What a user reads on stderr when a stop request ended the run, e.g.
        /// `stopping (SIGTERM): 3 sent, 0 deferred, 0 dead; 1021 not attempted were put back untouched`.
        public var stopLine: String? {
            guard let stopped else { return nil }
            let back = released > 0 ? "; \(released) not attempted were put back untouched" : ""
            return "stopping (\(stopped.name)): \(sent) sent, \(deferred) deferred, \(dead) dead\(back)"
        }

        /// What a user reads on stderr when not everything went out, e.g.
        /// `3 sent, 5 deferred, 0 dead; last error: unreachable: cannot connect …`; nil when all did.
        public var failureLine: String? {
            guard deferred + dead > 0 else { return nil }
            let last = lastFailure.map { "; last error: \($0.code): \($0.message)" } ?? ""
            return "\(sent) sent, \(deferred) deferred for a later retry, \(dead) dead\(last)"
        }
    }

    private let store: any Store
    private let transport: any Transport
    private let openTransport: (() throws(MsgError) -> any Transport)?
    private let policy: RetryPolicy
    private let options: Options
    private let faults: FaultPoints
    private let writer: NDJSONWriter
    private let stop: StopRequest
    private let clock: @Sendable () -> Timestamp
    private let sleep: @Sendable (MsgDuration) -> Void
    private let unit: @Sendable () -> Double
    private var attempted: Set<String> = []
    private var damaged: [String] = []
    /// A `config` outcome: the transport cannot deliver as configured; the run stops.
    private let misconfigured = FirstError()

    /// Per run: what is claimed and not yet recorded, by id and per key.
    private var inFlight: Set<String> = []
    private var pendingPerKey: [String: Int] = [:]
    /// Outcomes not yet applied to the stored destination states, and the states
    /// as of the last claim with them applied.
    private var events: [(key: String, event: DestinationPlanner.Event)] = []
    private var mirror: [String: DestinationState] = [:]
    /// Keys whose claimed message is a half-open probe.
    private var probes: Set<String> = []
    /// Keys that failed lately, handed out one message at a time (``KeyScheduler``).
    private var cautious: Set<String> = []

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
    private var maxPending: Int { options.batchSize * 2 }
    /// The most of them for one destination; nil when that is all of them (one worker).
    private var maxPerKey: Int? { options.concurrency > 1 ? max(1, maxPending / options.concurrency) : nil }

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
    private func waitUntil(_ until: Timestamp) {
        while stop.reason == nil {
            let left = until.milliseconds - clock().milliseconds
            if left <= 0 { return }
            sleep(MsgDuration(milliseconds: min(left, 100)))
        }
    }

    /// Whether what waits for `key` must go back: its breaker is open or it is paused.
    private func isHeld(_ key: String) -> Bool {
        guard let s = mirror[key] else { return false }
        let now = clock()
        if let until = s.pausedUntil, until > now { return true }
        if case .open = s.breaker(at: now) { return true }
        return false
    }

    /// What the workers hand back for one slice: the changes that record outcomes, the
    /// keys they were for, and the events they teach about destinations.
    struct Outcomes: Sendable {
        var changes: [Change]
        /// The keys with a failure: handed on only after this is recorded.
        var failedKeys: Set<String>
        var outcomes: [DeliveryOutcome?]
    }

    /// A claimed record and the message as it was before the claim (to put back).
    struct Claimed: Sendable {
        let record: EncodedMessage
        let original: Message
        var message: Message { record.message }
    }

    /// A delivery worker: takes slices until the scheduler closes, delivers each and
    /// hands back the changes that record the outcomes. A message past its expiry is
    /// not handed to the transport: it is dead (`expired`).
    private func startWorker(_ transport: SerializedTransport, _ scheduler: KeyScheduler, _ output: Channel<Outcomes>,
                             _ group: DispatchGroup, _ progress: Progress?, _ delivered: Counter) {
        let (policy, faults, clock, unit, deadline, stop) = (self.policy, self.faults, self.clock, self.unit, options.deadline, self.stop)
        let misconfigured = self.misconfigured
        let parallelism = transport.parallelism
        let maximum = options.batchSize
        group.enter()
        DispatchQueue(label: "msg.delivery").async {
            defer { group.leave() }
            var sizer = SliceSizer(maximum: maximum)
            while let slice = scheduler.take(size: parallelism > 1 ? parallelism : sizer.size, parallelism: parallelism) {
                var changes: [Change] = []
                var outcomes: [DeliveryOutcome?] = []
                var failedKeys = Set<String>()
                if stop.reason != nil || misconfigured.error != nil {
                    // Not attempted: back as it was.
                    changes = slice.map { Change($0.claimed.original, expected: .sending) }
                    outcomes = Array(repeating: nil, count: slice.count)
                } else {
                    let now = clock()
                    let live = slice.filter { item in item.claimed.record.message.expiresAt.map { $0 > now } ?? true }
                    let records = live.map(\.claimed.record)
                    let started = Monotonic.milliseconds()
                    var got = records.isEmpty ? [] : transport.deliver(records, deadline: deadline)
                    if !records.isEmpty {
                        sizer.observe(count: records.count, elapsed: MsgDuration(milliseconds: Monotonic.milliseconds() - started))
                        faults.pass(.afterDelivery, count: records.count)
                    }
                    if got.count < records.count {
                        // A transport that forgot some messages: they may or may not have gone
                        // out, so they fail retryably (the transport's dedup by id keeps it once).
                        let missing = MsgError(.remote, "the transport reported no outcome for this message")
                        got += Array(repeating: .failed(missing, retryAfter: nil), count: records.count - got.count)
                    }
                    // A `config` failure: nothing can go out as configured. That message
                    // and the rest are put back unattempted (Transport requirement 4).
                    var cut = records.count
                    if let i = got.prefix(records.count).firstIndex(where: Self.isMisconfiguration) {
                        if case .failed(let error, _) = got[i] { misconfigured.keep(error) }
                        cut = i
                    }
                    let done = clock()
                    var next = 0
                    for item in slice {
                        var x = item.claimed.record.message
                        if let expires = x.expiresAt, expires <= now {
                            if let dead = try? DestinationPlanner.expire(x, now: now) {
                                changes.append(Change(dead, expected: .sending))
                                outcomes.append(nil)
                            }
                            continue
                        }
                        defer { next += 1 }
                        guard next < cut else {
                            changes.append(Change(item.claimed.original, expected: .sending))
                            outcomes.append(nil)
                            continue
                        }
                        do throws(MsgError) {
                            try policy.apply(got[next], to: &x, now: done, unit: unit())
                        } catch {
                            continue  // not sending any more: nothing to record (cannot happen)
                        }
                        changes.append(Change(x, expected: .sending))
                        outcomes.append(got[next])
                        if case .failed = got[next] { failedKeys.insert(item.key) }
                    }
                    progress?.update(delivered.add(records.count))
                }
                // Held until recorded when failed; the rest may go on at once.
                if scheduler.shared {
                    scheduler.done(Set(slice.map(\.key)).subtracting(failedKeys))
                } else {
                    scheduler.hold(failedKeys)
                }
                output.send(Outcomes(changes: changes, failedKeys: failedKeys, outcomes: outcomes))
            }
        }
    }

    /// Whether an outcome says the transport cannot deliver anything as configured.
    private static func isMisconfiguration(_ outcome: DeliveryOutcome) -> Bool {
        if case .failed(let error, _) = outcome, error.code == .config { return true }
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

    /// What one claim gave.
    private struct Round {
        var taken: [KeyScheduler.Item] = []
        var expired: [EncodedMessage] = []
        var held: [String: DestinationPlanner.Hold] = [:]
        var heldCount: [String: Int] = [:]
        var wake: Timestamp?
        var notices: [String] = []
    }

    /// Takes up to `limit` due messages per destination, recording them `sending` in
    /// one commit with what the last outcomes taught about their destinations.
    private func claim(limit: Int) throws(MsgError) -> Round {
        let now = clock()
        var query = Query(statuses: options.statuses, dueBy: options.ignoreDue ? nil : now)
        if let targets = options.targets { query.ids = Set(targets) }
        let leaseLength = MsgDuration(milliseconds: max(60_000, options.deadline.milliseconds * Int64(options.batchSize) * 2))
        let faults = self.faults
        // An attempt ends sent, delivered, failed or dead: only when `failed` is among the
        // statuses taken (retry) could one run pick a message up twice, so only then is
        // each message remembered.
        let remember = options.statuses.contains(.failed) || options.targets != nil
        var originals: [String: Message] = [:]
        var damaged: [String] = []
        let rules = options.rules
        let maxPerKey = self.maxPerKey
        let attempted = self.attempted
        // Read in place through self: a copy would be copied in full by the inserts below.
        let planner = DestinationPlanner(
            rules: rules, now: now, isOwn: { [unowned self] id in self.inFlight.contains(id) }, events: events,
            probeLease: now.adding(leaseLength),
            room: maxPerKey.map { most in { [unowned self] key in most - (self.pendingPerKey[key] ?? 0) } },
            skip: { m in
                // A damaged record is never sent; the store sets it aside as dead.
                if m.isDamaged {
                    damaged.append(m.id)
                    return true
                }
                return remember && attempted.contains(m.id)
            },
            prepare: { (m) throws(MsgError) -> Message in
                var x = m
                try x.transition(to: .sending, event: "attempt", at: now)
                x.lease = Owner.lease(now: now, duration: leaseLength)
                faults.pass(.beforeSending)
                originals[m.id] = m
                return x
            })
        let claimed = try store.claim(ClaimRequest(query: query, limit: limit, scanLimit: max(4 * options.batchSize, 4096)), planner)
        events = []
        mirror = planner.states
        self.damaged += damaged
        var round = Round(held: planner.held, heldCount: planner.heldCount, wake: planner.wake, notices: planner.notices)
        for r in claimed {
            if remember { self.attempted.insert(r.message.id) }
            if r.message.status == .dead {
                round.expired.append(r)
                continue
            }
            let key = rules.key.of(r.message)
            inFlight.insert(r.message.id)
            if maxPerKey != nil { pendingPerKey[key, default: 0] += 1 }
            round.taken.append(KeyScheduler.Item(claimed: Claimed(record: r, original: originals[r.message.id] ?? r.message), key: key))
        }
        probes.formUnion(planner.probes)
        if !claimed.isEmpty { faults.pass(.afterSending, count: claimed.count) }
        return round
    }

    /// Prints and counts the messages a claim found expired (stored dead by the claim).
    private func recordExpired(_ records: [EncodedMessage], into summary: inout Summary) throws(MsgError) {
        guard !records.isEmpty else { return }
        writer.flushEveryLine = false
        for r in records {
            summary.dead += 1
            summary.lastFailure = r.message.lastError
            writeOut { () throws(MsgError) in try writer.writeRaw(r.jsonWithoutHistory) }
        }
        writeOut { () throws(MsgError) in try writer.finish() }
    }

    /// Puts claimed messages back exactly as they were before their claim.
    private func putBack(_ items: [KeyScheduler.Item], into summary: inout Summary, counted: Bool) throws(MsgError) {
        guard !items.isEmpty else { return }
        let applied = try store.update(items.map { Change($0.claimed.original, expected: .sending) })
        for (item, ok) in zip(items, applied) {
            forget(item.claimed.record.message.id, key: item.key)
            if ok && counted { summary.released += 1 }
        }
    }

    private func forget(_ id: String, key: String) {
        inFlight.remove(id)
        if maxPerKey != nil, let n = pendingPerKey[key] { pendingPerKey[key] = n > 1 ? n - 1 : nil }
    }

    /// Records the outcomes of one slice in one commit, learns from them about their
    /// destinations, and prints the records. When standard output fails (closed:
    /// EPIPE, as SIGPIPE is ignored while flushing; or any other error, kept to be
    /// thrown at the end), prints no more and tells `stop`: the outcomes are recorded
    /// all the same and nothing is left `sending`.
    private func record(_ outcomes: Outcomes, into summary: inout Summary, _ scheduler: KeyScheduler) throws(MsgError) {
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
    private func learn(_ outcome: DeliveryOutcome, key: String, now: Timestamp) {
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
            if error.code == .rateLimited, let retryAfter { learnt.append(.paused(until: now.adding(retryAfter))) }
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
    private var outputError: MsgError?

    /// Runs a write to standard output unless it has failed before.
    private func writeOut(_ write: () throws(MsgError) -> Void) {
        guard stop.reason != .closedOutput && outputError == nil else { return }
        do throws(MsgError) {
            try write()
        } catch {
            if (error.underlying as? Errno)?.rawValue != EPIPE { outputError = error }
            stop.outputClosed()
        }
    }
}

/// A transport that may be handed to another thread.
///
/// `@unchecked Sendable` is safe here because every use of the transport goes
/// through `lock`, so no two threads ever run its methods at once (the flusher only
/// uses it from its delivery thread, so the lock is never contended).
final class SerializedTransport: @unchecked Sendable {
    private let lock = Mutex(())
    private let transport: any Transport

    /// Read once: it does not change.
    let parallelism: Int

    init(_ transport: any Transport) {
        self.transport = transport
        parallelism = max(1, transport.parallelism)
    }

    func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> [DeliveryOutcome] {
        lock.withLock { _ in transport.deliver(records, deadline: deadline) }
    }
}

/// The first error kept by any thread.
final class FirstError: Sendable {
    private let value = Mutex<MsgError?>(nil)
    var error: MsgError? { value.withLock { $0 } }
    func keep(_ error: MsgError) { value.withLock { $0 = $0 ?? error } }
    func clear() { value.withLock { $0 = nil } }
}

/// A count shared by the delivery threads (the progress line).
final class Counter: Sendable {
    private let value = Mutex(0)
    /// Adds `n`. - Returns: the new total.
    func add(_ n: Int) -> Int { value.withLock { $0 += n; return $0 } }
}
