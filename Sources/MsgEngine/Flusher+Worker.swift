#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import Dispatch
import MsgKit
import Synchronization

/// The delivery workers of a run (``Flusher/run(progress:)``).
extension Flusher {
    /// What a worker hands back for one slice: the changes that record outcomes (or
    /// put messages back), each one's outcome, and the destinations that failed.
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
    }

    /// A delivery worker: takes slices until the scheduler closes, delivers each and
    /// hands back the changes that record the outcomes. A message past its expiry is
    /// not handed to the transport: it is dead (`expired`).
    func startWorker(_ transport: SerializedTransport, _ scheduler: KeyScheduler, _ output: Channel<Outcomes>,
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
