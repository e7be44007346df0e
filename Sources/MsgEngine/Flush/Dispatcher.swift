#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import Dispatch
import MsgKit
import Synchronization

/// The delivery workers of a run and the scheduler they take from: claimed
/// messages go in (``add(_:)``), outcomes come out (``receive(milliseconds:)``).
///
/// Each worker has a transport of its own and takes slices from the
/// ``KeyScheduler``, each destination's messages in FIFO order, one destination
/// held by one worker at a time. A worker delivers a slice, works out each
/// message's new record from its outcome (spliced, and its ledger leaf made, on
/// the worker's thread) and hands back the changes; a message past its expiry is not handed to the
/// transport but made dead. Slices are sized to take about 250 ms
/// (``SliceSizer``), and the stop request is asked between them.
package final class Dispatcher {
    /// What a worker hands back for one slice: the changes that record outcomes (or
    /// put messages back), each one's outcome, and the destinations that failed.
    package struct Outcomes: Sendable {
        package var items: [Claimer.Claimed]
        package var changes: [Change]
        package var outcomes: [DeliveryOutcome?]
        /// The destinations with a failure: handed on only after this is recorded.
        package var failedKeys: Set<String>

        package init(items: [Claimer.Claimed], changes: [Change], outcomes: [DeliveryOutcome?], failedKeys: Set<String>) {
            self.items = items
            self.changes = changes
            self.outcomes = outcomes
            self.failedKeys = failedKeys
        }
    }

    /// What every worker needs besides its transport.
    package struct Delivery: Sendable {
        let policy: RetryPolicy
        let faults: FaultPoints
        let clock: @Sendable () -> Timestamp
        let unit: @Sendable () -> Double
        /// The deadline of each attempt (a lane's own, in its workers).
        var deadline: MsgDuration
        let batchSize: Int
        let stop: StopRequest
        /// A `config` outcome: the transport cannot deliver as configured; the run stops.
        let misconfigured: FirstError
        let progress: Progress?
        let delivered: Counter
        /// Whether the store keeps a ledger: then a worker makes each outcome's part
        /// of it (the hashing) beside the run's commits, not in them.
        let ledger: Bool

        package init(policy: RetryPolicy, faults: FaultPoints, clock: @escaping @Sendable () -> Timestamp, unit: @escaping @Sendable () -> Double,
                     deadline: MsgDuration, batchSize: Int, stop: StopRequest, misconfigured: FirstError, progress: Progress?, delivered: Counter,
                     ledger: Bool = false) {
            self.policy = policy
            self.faults = faults
            self.clock = clock
            self.unit = unit
            self.deadline = deadline
            self.batchSize = batchSize
            self.stop = stop
            self.misconfigured = misconfigured
            self.progress = progress
            self.delivered = delivered
            self.ledger = ledger
        }
    }

    /// Workers of their own for some destinations: one transport each, and the
    /// deadline of each attempt.
    package struct Lane {
        let transports: [any Transport]
        let deadline: MsgDuration
    }

    private let scheduler: LaneSchedulers
    private let results: Channel<Outcomes>
    private let workers = DispatchGroup()

    /// Starts one worker per transport of each lane; `lane` says which lane a
    /// claimed message goes to (an index of `lanes`).
    init(lanes: [Lane], lane: @escaping @Sendable (Claimer.Claimed) -> Int, delivery: Delivery) {
        let schedulers = lanes.map { KeyScheduler(workers: $0.transports.count) }
        scheduler = LaneSchedulers(schedulers, lane: lane)
        let count = lanes.reduce(0) { $0 + $1.transports.count }
        results = Channel<Outcomes>(capacity: count + 1)
        for (l, s) in zip(lanes, schedulers) {
            var d = delivery
            d.deadline = l.deadline
            for t in l.transports { start(SerializedTransport(t), s, d) }
        }
    }

    /// Hands claimed messages to the workers.
    func add(_ items: [Claimer.Claimed]) { scheduler.add(items) }

    /// Takes back everything waiting for a worker.
    func withdrawAll() -> [Claimer.Claimed] { scheduler.withdrawAll() }

    /// The next outcomes, waiting at most `milliseconds` (nil: as long as it takes).
    func receive(milliseconds: Int64? = nil) -> Outcomes? {
        guard let milliseconds else { return results.receive() }
        return results.receive(milliseconds: milliseconds)
    }

    /// Ends the workers. Also when a store error ends the run: a worker blocked
    /// handing back its outcomes is let go (they are dropped; its messages stay
    /// `sending` for recover, as after a crash).
    func close() {
        scheduler.close()
        results.close()
        workers.wait()
    }

    private func start(_ transport: SerializedTransport, _ scheduler: KeyScheduler, _ d: Delivery) {
        let parallelism = transport.parallelism
        let results = self.results
        let group = workers
        group.enter()
        DispatchQueue(label: "msg.delivery").async {
            defer { group.leave() }
            var sizer = SliceSizer(maximum: d.batchSize)
            while let slice = scheduler.take(size: parallelism > 1 ? parallelism : sizer.size, parallelism: parallelism) {
                let out: Outcomes
                if d.stop.reason != nil || d.misconfigured.error != nil {
                    // Not attempted: back as it was.
                    out = Outcomes(items: slice, changes: slice.map { Change($0.original, expected: .sending) },
                                   outcomes: Array(repeating: nil, count: slice.count), failedKeys: [])
                } else {
                    out = Self.deliver(slice, transport, d, &sizer)
                }
                scheduler.finished(Set(slice.map(\.key)), failed: out.failedKeys)
                results.send(out)
            }
        }
    }

    /// Delivers one slice and works out its changes: what each outcome makes of
    /// its message, a message past its expiry made dead without being handed to the
    /// transport, an outcome the transport left out failed retryably, and after a
    /// `config` outcome that message and the rest put back unattempted.
    package static func deliver(_ slice: [Claimer.Claimed], _ transport: SerializedTransport, _ d: Delivery,
                                _ sizer: inout SliceSizer) -> Outcomes {
        let now = d.clock()
        let live = slice.filter { item in item.record.reading { $0.expiresAt.map { $0 > now } ?? true } }
        let records = live.map(\.record)
        var got: [DeliveryOutcome] = []
        var receipts: [String: JSONValue] = [:]
        if !records.isEmpty {
            let started = Monotonic.milliseconds()
            (got, receipts) = transport.deliver(records, deadline: d.deadline)
            sizer.observe(count: records.count, elapsed: MsgDuration(milliseconds: Monotonic.milliseconds() - started))
            d.faults.pass(.afterDelivery, count: records.count)
        }
        if got.count < records.count {
            // A transport that forgot some messages: they may or may not have gone out,
            // so they fail retryably (the transport's dedup by id keeps it once).
            let missing = MsgError(.remote, "the transport reported no outcome for this message")
            got += Array(repeating: .failed(missing, retryAfter: nil), count: records.count - got.count)
        }
        // A `config` failure: nothing can go out as configured. That message and the
        // rest are put back unattempted (Transport requirement 4).
        var cut = records.count
        if let i = got.prefix(records.count).firstIndex(where: isMisconfiguration) {
            if case .failed(let error, _) = got[i] { d.misconfigured.keep(error) }
            cut = i
        }
        let done = d.clock()
        var out = Outcomes(items: [], changes: [], outcomes: [], failedKeys: [])
        var next = 0
        for item in slice {
            if let expires = item.record.reading({ $0.expiresAt }), expires <= now {
                if let dead = try? DestinationBook.expire(item.record.message, now: now) {
                    out.items.append(item)
                    out.changes.append(Change(EncodedMessage(updating: item.record, to: dead), expected: .sending))
                    out.outcomes.append(nil)
                }
                continue
            }
            defer { next += 1 }
            guard next < cut else {
                out.items.append(item)
                out.changes.append(Change(item.original, expected: .sending))
                out.outcomes.append(nil)
                continue
            }
            var x = item.record.message
            do throws(MsgError) {
                try d.policy.apply(got[next], to: &x, now: done, unit: d.unit())
                if !receipts.isEmpty, let receipt = receipts[x.id], !x.history.isEmpty {
                    x.history[x.history.count - 1].extra.append(.init("receipt", receipt))
                }
            } catch {
                continue  // not sending any more: nothing to record (cannot happen)
            }
            out.items.append(item)
            let record = EncodedMessage(updating: item.record, to: x)
            out.changes.append(Change(d.ledger ? record.preparingLedger(stored: false) : record, expected: .sending))
            out.outcomes.append(got[next])
            if case .failed = got[next] { out.failedKeys.insert(item.key) }
        }
        d.progress?.update(d.delivered.add(records.count))
        return out
    }

    /// Whether an outcome says the transport cannot deliver anything as configured.
    static func isMisconfiguration(_ outcome: DeliveryOutcome) -> Bool {
        if case .failed(let error, _) = outcome, error.code == .config { return true }
        return false
    }
}

/// A transport that may be handed to another thread.
///
/// `@unchecked Sendable` is safe here because every use of the transport goes
/// through `lock`, so no two threads ever run its methods at once (each delivery
/// worker has a transport of its own, so the lock is never contended).
package final class SerializedTransport: @unchecked Sendable {
    private let lock = Mutex(())
    private let transport: any Transport
    /// The transport, when it keeps receipts.
    private let receipts: (any DeliveryReceipts)?

    /// Read once: it does not change.
    let parallelism: Int

    package init(_ transport: any Transport) {
        self.transport = transport
        receipts = transport.receipts
        parallelism = max(1, transport.parallelism)
    }

    /// The outcomes, and the receipt of each message delivered when the transport
    /// keeps them.
    func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> (outcomes: [DeliveryOutcome], receipts: [String: JSONValue]) {
        lock.withLock { _ in
            let outcomes = transport.deliver(records, deadline: deadline)
            guard let receipts else { return (outcomes, [:]) }
            var kept: [String: JSONValue] = [:]
            for (record, outcome) in zip(records, outcomes) {
                guard case .delivered = outcome, let receipt = receipts.takeReceipt(for: record.id) else { continue }
                kept[record.id] = receipt
            }
            return (outcomes, kept)
        }
    }
}

/// The first error kept by any thread.
package final class FirstError: Sendable {
    private let value = Mutex<MsgError?>(nil)
    package init() {}
    package var error: MsgError? { value.withLock { $0 } }
    func keep(_ error: MsgError) { value.withLock { $0 = $0 ?? error } }
    func clear() { value.withLock { $0 = nil } }
}

/// A count shared by the delivery threads (the progress line).
package final class Counter: Sendable {
    private let value = Mutex(0)
    package init() {}
    /// Adds `n`. - Returns: the new total.
    func add(_ n: Int) -> Int { value.withLock { $0 += n; return $0 } }
}

/// What settling a slice asks of the workers' schedulers, through the dispatcher.
extension Dispatcher: WaitingMessages {
    package func withdraw(_ key: String) -> [Claimer.Claimed] { scheduler.withdraw(key) }
    package func setCautious(_ key: String, _ cautious: Bool) { scheduler.setCautious(key, cautious) }
    package func done(_ keys: Set<String>) { scheduler.done(keys) }
}
