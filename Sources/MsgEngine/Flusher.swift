#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import Dispatch
import Synchronization
import MsgKit

/// `flush` and `retry`: takes due messages in FIFO order under a lease, records
/// `sending` durably, delivers them in order, and records each outcome.
///
/// Per batch there are two store commits (the claim, the outcomes) and one
/// transport call, so the cost per message is close to the transport's own.
/// A message is attempted at most once per run.
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
        public var exitCode: Int32 { dead > 0 || !damaged.isEmpty ? 1 : deferred > 0 ? 75 : 0 }

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
    private let policy: RetryPolicy
    private let options: Options
    private let faults: FaultPoints
    private let writer: NDJSONWriter
    private let stop: StopRequest
    private let clock: @Sendable () -> Timestamp
    private let unit: @Sendable () -> Double
    private var attempted: Set<String> = []
    private var damaged: [String] = []
    /// A `config` outcome: the transport cannot deliver as configured; the run stops.
    private let misconfigured = FirstError()

    /// A flusher; `clock` and `unit` (a random number in [0, 1), for jitter) are
    /// injected so tests control time. `stop` is asked between transport calls.
    public init(store: any Store, transport: any Transport, policy: RetryPolicy, options: Options,
                faults: FaultPoints, writer: NDJSONWriter = NDJSONWriter(), stop: StopRequest = StopRequest(),
                clock: @escaping @Sendable () -> Timestamp = { Timestamp.now() },
                unit: (@Sendable () -> Double)? = nil) {
        self.store = store
        self.stop = stop
        self.transport = transport
        self.policy = policy
        self.options = options
        self.faults = faults
        self.writer = writer
        self.clock = clock
        if let unit {
            self.unit = unit
        } else {
            // Jitter needs no cryptographic randomness: one seed, then a fast generator
            // (behind a lock, as the delivery thread draws from it).
            let rng = Mutex(SplitMix64(seed: UInt64.random(in: 0...UInt64.max)))
            self.unit = { rng.withLock { $0.unit() } }
        }
    }

    /// Sends everything due now, batch by batch, until done or asked to stop.
    /// - Throws: store errors.
    ///
    /// Two threads share the work, so the store and the transport run at once: this
    /// one claims batch N+1 (recording it `sending`) while a delivery thread hands
    /// batch N to the transport and works out its outcomes; this one then records
    /// them. Every batch is still recorded `sending` before its delivery starts, and
    /// batches are delivered one after another, in order, by the one thread that ever
    /// touches the transport.
    ///
    /// The delivery thread hands a batch over in slices sized to take about 250 ms
    /// each (``SliceSizer``) and asks `stop` between them. Once asked, nothing more is
    /// claimed, the outcomes of the slice in flight are recorded, and every message
    /// claimed but not attempted is put back exactly as it was before its claim.
    public func run(progress: Progress? = nil) throws(MsgError) -> Summary {
        attempted = []
        damaged = []
        misconfigured.clear()
        defer { progress?.finish() }
        if let progress, progress.isShown {
            // What is due now, so the line says how far along the run is.
            var due = Query(statuses: options.statuses, dueBy: options.ignoreDue ? nil : clock(), ids: options.targets.map(Set.init))
            due.limit = options.limit
            progress.total = try store.count(due)
        }
        var summary = Summary()
        var remaining = options.limit ?? Int.max
        let toDeliver = Channel<[Claimed]?>(capacity: 1)
        let delivered = Channel<Outcomes>(capacity: 1)
        outputError = nil
        startDeliveryThread(toDeliver, delivered, progress)
        defer { toDeliver.send(nil) }
        var inFlight = 0
        var exhausted = false
        while true {
            if !exhausted && (stop.reason != nil || misconfigured.error != nil) { exhausted = true }
            if !exhausted && inFlight < 2 && remaining > 0 {
                let claimed = try claimBatch(limit: min(options.batchSize, remaining))
                if claimed.isEmpty {
                    exhausted = true
                } else {
                    remaining -= claimed.count
                    toDeliver.send(claimed)
                    inFlight += 1
                    continue
                }
            }
            if inFlight == 0 { break }
            let outcomes = delivered.receive()
            inFlight -= 1
            try record(outcomes, into: &summary)
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

    /// What the delivery thread hands back for one batch: the changes that record
    /// outcomes, then the `released` changes that put unattempted messages back.
    struct Outcomes: Sendable {
        var changes: [Change]
        var released: Int
    }

    /// A claimed record and the message as it was before the claim (to put back).
    struct Claimed: Sendable {
        let record: EncodedMessage
        let original: Message
        var message: Message { record.message }
    }

    /// The delivery thread: takes claimed batches in order until nil, delivers each
    /// slice by slice and hands back the changes that record the outcomes, and those
    /// that put back what a stop request left unattempted.
    private func startDeliveryThread(_ input: Channel<[Claimed]?>, _ output: Channel<Outcomes>, _ progress: Progress?) {
        let transport = SerializedTransport(self.transport)
        let (policy, faults, clock, unit, deadline, stop) = (self.policy, self.faults, self.clock, self.unit, options.deadline, self.stop)
        let misconfigured = self.misconfigured
        let maximum = options.batchSize
        DispatchQueue(label: "msg.delivery").async {
            var sizer = SliceSizer(maximum: maximum)
            var attempted = 0  // across batches, for the progress line
            while let batch = input.receive() {
                var outcomes: [DeliveryOutcome] = []
                outcomes.reserveCapacity(batch.count)
                while outcomes.count < batch.count && stop.reason == nil && misconfigured.error == nil {
                    let slice = batch[outcomes.count..<min(batch.count, outcomes.count + sizer.size)].map(\.record)
                    let started = Monotonic.milliseconds()
                    var got = transport.deliver(slice, deadline: deadline)
                    sizer.observe(count: slice.count, elapsed: MsgDuration(milliseconds: Monotonic.milliseconds() - started))
                    faults.pass(.afterDelivery, count: slice.count)
                    if got.count < slice.count {
                        // A transport that forgot some messages: they may or may not have gone
                        // out, so they fail retryably (the transport's dedup by id keeps it once).
                        let missing = MsgError(.remote, "the transport reported no outcome for this message")
                        got += Array(repeating: .failed(missing, retryAfter: nil), count: slice.count - got.count)
                    }
                    // A `config` failure: nothing can go out as configured. That message
                    // and the rest are put back unattempted (Transport requirement 4).
                    if let cut = got.prefix(slice.count).firstIndex(where: Self.isMisconfiguration) {
                        if case .failed(let error, _) = got[cut] { misconfigured.keep(error) }
                        got = Array(got[..<cut])
                    }
                    outcomes += got.prefix(slice.count)
                    progress?.update(attempted + outcomes.count)
                }
                attempted += outcomes.count
                let done = clock()
                var changes: [Change] = []
                changes.reserveCapacity(batch.count)
                for (c, outcome) in zip(batch, outcomes) {
                    var x = c.message
                    do throws(MsgError) {
                        try policy.apply(outcome, to: &x, now: done, unit: unit())
                    } catch {
                        continue  // not sending any more: nothing to record (cannot happen)
                    }
                    changes.append(Change(x, expected: .sending))
                }
                for c in batch[outcomes.count...] { changes.append(Change(c.original, expected: .sending)) }
                output.send(Outcomes(changes: changes, released: batch.count - outcomes.count))
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

    /// Takes up to `limit` due messages, recording them `sending` in one commit.
    private func claimBatch(limit: Int) throws(MsgError) -> [Claimed] {
        let now = clock()
        var query = Query(statuses: options.statuses, dueBy: options.ignoreDue ? nil : now)
        if let targets = options.targets { query.ids = Set(targets) }
        let leaseLength = MsgDuration(milliseconds: max(60_000, options.deadline.milliseconds * Int64(limit) * 2))
        let faults = self.faults
        // An attempt ends sent, delivered, failed or dead: only when `failed` is among the
        // statuses taken (retry) could one run pick a message up twice, so only then is
        // each message remembered. Read in place: a local copy would be copied in full
        // by the inserts below.
        let remember = options.statuses.contains(.failed) || options.targets != nil
        var originals: [String: Message] = [:]
        var damaged: [String] = []
        let claimed = try store.claim(query, limit: limit) { (m) throws(MsgError) -> Message? in
            // A damaged record is never sent; the store sets it aside as dead.
            if m.isDamaged {
                damaged.append(m.id)
                return nil
            }
            guard !remember || !self.attempted.contains(m.id) else { return nil }
            var x = m
            try x.transition(to: .sending, event: "attempt", at: now)
            x.lease = Owner.lease(now: now, duration: leaseLength)
            faults.pass(.beforeSending)
            originals[m.id] = m
            return x
        }
        self.damaged += damaged
        if remember { for r in claimed { self.attempted.insert(r.message.id) } }
        if !claimed.isEmpty { faults.pass(.afterSending, count: claimed.count) }
        return claimed.map { Claimed(record: $0, original: originals[$0.message.id] ?? $0.message) }
    }

    /// Records the outcomes of one batch in one commit and prints the records. When
    /// standard output fails (closed: EPIPE, as SIGPIPE is ignored while flushing; or
    /// any other error, kept to be thrown at the end), prints no more and tells `stop`:
    /// the outcomes are recorded all the same and nothing is left `sending`.
    private func record(_ outcomes: Outcomes, into summary: inout Summary) throws(MsgError) {
        let changes = outcomes.changes
        let applied = try store.update(changes)
        faults.pass(.afterSent, count: changes.count)
        writer.flushEveryLine = false
        let firstReleased = changes.count - outcomes.released
        for (i, (change, ok)) in zip(changes, applied).enumerated() where ok {
            if i >= firstReleased {
                summary.released += 1
                continue  // put back as it was: nothing to print
            }
            switch change.message.status {
            case .sent, .delivered: summary.sent += 1
            case .dead:
                summary.dead += 1
                summary.lastFailure = change.message.lastError
            default:
                summary.deferred += 1
                summary.lastFailure = change.message.lastError
            }
            // The record as just stored, without history, from the same encoding.
            writeOut { () throws(MsgError) in try writer.writeRaw(change.record.jsonWithoutHistory) }
        }
        writeOut { () throws(MsgError) in try writer.finish() }
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

    init(_ transport: any Transport) { self.transport = transport }

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
