import Dispatch
import MsgKit
import Synchronization

/// Claimed messages waiting for a delivery worker, queued per destination.
///
/// A worker takes a slice: with a transport that delivers one record after another
/// (``Transport/parallelism`` 1), the queued messages of the destinations waiting
/// longest, each destination's in FIFO order; with one that has several in flight,
/// the first message of each of several destinations. A destination is handed to
/// one worker at a time, so it never has two messages in flight, and its messages
/// go in the order they were claimed. A destination whose slice had a failure is
/// handed on only once its outcomes are recorded (its breaker may have opened), and
/// while it fails, one message at a time.
final class KeyScheduler: Sendable {
    struct Item: Sendable {
        let claimed: Flusher.Claimed
        let key: String
    }

    private struct State {
        var queues: [String: [Item]] = [:]
        /// Keys with messages waiting and no worker on them, longest waiting first.
        var ready: [String] = []
        var readyHead = 0
        var active: Set<String> = []
        /// Keys that failed lately: one message per slice, so their breaker sees each outcome.
        var cautious: Set<String> = []
        var closed = false
        var count = 0
    }

    private let state = Mutex(State())
    private let wakeup = DispatchSemaphore(value: 0)
    private let workers: Int

    init(workers: Int) { self.workers = workers }

    /// Messages waiting (not yet taken by a worker).
    var waiting: Int { state.withLock { $0.count } }

    /// How many messages of `key` are waiting.
    func waiting(_ key: String) -> Int { state.withLock { $0.queues[key]?.count ?? 0 } }

    func add(_ items: [Item]) {
        guard !items.isEmpty else { return }
        let woken = state.withLock { s -> Int in
            var newlyReady = 0
            for item in items {
                if s.queues[item.key] == nil || s.queues[item.key]!.isEmpty {
                    s.queues[item.key] = [item]
                    if !s.active.contains(item.key) {
                        s.ready.append(item.key)
                        newlyReady += 1
                    }
                } else {
                    s.queues[item.key]!.append(item)
                }
                s.count += 1
            }
            return newlyReady
        }
        for _ in 0..<min(woken, workers) { wakeup.signal() }
    }

    /// Waits for a slice of up to `size` messages; nil once closed.
    func take(size: Int, parallelism: Int) -> [Item]? {
        while true {
            let slice = state.withLock { s -> [Item]? in
                if s.closed { return nil }
                var slice: [Item] = []
                while slice.count < size && s.readyHead < s.ready.count {
                    let key = s.ready[s.readyHead]
                    s.readyHead += 1
                    guard var queue = s.queues[key], !queue.isEmpty else { continue }
                    let n = parallelism > 1 || s.cautious.contains(key) ? 1 : min(queue.count, size - slice.count)
                    slice += queue[..<n]
                    queue.removeFirst(n)
                    s.queues[key] = queue.isEmpty ? nil : queue
                    s.active.insert(key)
                    s.count -= n
                }
                if s.readyHead > 1024 && s.readyHead * 2 > s.ready.count {
                    s.ready.removeFirst(s.readyHead)
                    s.readyHead = 0
                }
                return slice
            }
            guard let slice else { return nil }
            if !slice.isEmpty { return slice }
            wakeup.wait()
        }
    }

    /// A worker is done with these keys: those with messages waiting are ready again.
    func done(_ keys: Set<String>) {
        let woken = state.withLock { s -> Int in
            var n = 0
            for key in keys {
                s.active.remove(key)
                if let q = s.queues[key], !q.isEmpty {
                    s.ready.append(key)
                    n += 1
                }
            }
            return n
        }
        for _ in 0..<min(woken, workers) { wakeup.signal() }
    }

    /// Marks `key` as failing lately (one message per slice) or not.
    func setCautious(_ key: String, _ cautious: Bool) {
        state.withLock { s in
            if cautious { s.cautious.insert(key) } else { s.cautious.remove(key) }
        }
    }

    /// Takes back what waits for `key` (its breaker opened, or it was paused).
    func withdraw(_ key: String) -> [Item] {
        state.withLock { s in
            let items = s.queues.removeValue(forKey: key) ?? []
            s.count -= items.count
            return items
        }
    }

    /// Takes back everything waiting.
    func withdrawAll() -> [Item] {
        state.withLock { s in
            let items = s.queues.values.flatMap { $0 }
            s.queues = [:]
            s.ready = []
            s.readyHead = 0
            s.count = 0
            return items
        }
    }

    /// Ends the workers (after what they hold).
    func close() {
        state.withLock { $0.closed = true }
        for _ in 0..<workers { wakeup.signal() }
    }
}
