#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// Where the acknowledgements of one `deliver` call meet its caller: libnats calls
/// ``record(id:outcome:)`` on its own thread for each PubAck (or failure), the
/// caller waits in ``wait(until:)`` until every message has its outcome, the
/// connection is lost, or the deadline passes.
final class AckBoard: @unchecked Sendable {
    // Allocated, not stored: pthread objects must not move.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// For each id of the call, its index; an acknowledgement for any other id
    /// (a publish of an earlier call that timed out) is dropped.
    private var expected: [String: Int] = [:]
    private var outcomes: [DeliveryOutcome?] = []
    private var missing = 0
    private var lost = false
    /// The PubAck of each message the last call delivered, until the host takes it.
    private var receipts: [String: JSONValue] = [:]

    /// Whether every message goes to one subject (``SubjectTemplate/isFixed``).
    let fixedSubject: Bool

    init(fixedSubject: Bool) {
        self.fixedSubject = fixedSubject
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Starts a call of `count` messages.
    func begin(count: Int) {
        locked {
            expected = [:]
            expected.reserveCapacity(count)
            outcomes = Array(repeating: nil, count: count)
            receipts = [:]
            missing = 0
            lost = false
        }
    }

    /// Message `index`, id `id`, is being published.
    func expect(id: String, index: Int) {
        locked {
            expected[id] = index
            missing += 1
        }
    }

    /// Message `index` has its outcome without waiting (it could not be published).
    func settle(index: Int, _ outcome: DeliveryOutcome) {
        locked { outcomes[index] = outcome }
    }

    /// An acknowledgement (or its failure) for `id`, and what the stream said of it.
    func record(id: String, outcome: DeliveryOutcome, receipt: JSONValue? = nil) {
        locked {
            guard let index = expected.removeValue(forKey: id), outcomes[index] == nil else { return }
            outcomes[index] = outcome
            if let receipt { receipts[id] = receipt }
            missing -= 1
            if missing == 0 { pthread_cond_broadcast(condition) }
        }
    }

    /// The connection the calls use now (``NATSConnection`` counts them): a loss
    /// said late by one closed before is not this one's.
    private var generation = 0

    /// A new connection, `generation`, is open.
    func connected(generation: Int) {
        locked { self.generation = generation }
    }

    /// Connection `generation` is gone: nothing more will be acknowledged on it.
    func connectionLost(generation: Int) {
        locked {
            guard generation == self.generation else { return }
            lost = true
            pthread_cond_broadcast(condition)
        }
    }

    /// Waits until every expected message has its outcome, the connection is lost,
    /// or `deadline` (CLOCK_MONOTONIC, ns); then the outcomes, with `unanswered`
    /// for each message still without one, and stops listening for this call.
    func wait(until deadline: UInt64, unanswered: (_ lost: Bool) -> DeliveryOutcome) -> [DeliveryOutcome] {
        locked {
            var limit = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
            while missing > 0 && !lost {
                if pthread_cond_timedwait(condition, mutex, &limit) == ETIMEDOUT { break }
            }
            let fallback = unanswered(lost)
            let result = outcomes.map { $0 ?? fallback }
            expected = [:]
            missing = 0
            return result
        }
    }

    /// The receipt of `id` from the last call, taken.
    func takeReceipt(for id: String) -> JSONValue? {
        locked { receipts.removeValue(forKey: id) }
    }

    private func locked<R>(_ body: () -> R) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }
}
