import Dispatch
import MsgKit
import Synchronization

/// Claimed messages waiting for a delivery worker, in claim order, with the
/// destinations a worker holds.
///
/// A worker takes a slice: the oldest waiting messages whose destination no other
/// worker holds, each destination's in FIFO order; one message per destination when
/// the transport has several in flight in one call (``Transport/parallelism``) or
/// when the destination failed lately. With several workers a slice holds at most
/// its share of the waiting destinations (at least one), so a few slow ones never
/// tie up one worker's call while the others idle. A destination is held by one worker at a
/// time, so it never has two messages in flight, and its messages go in the order
/// they were claimed. A destination whose slice had a failure is handed on only once
/// its outcomes are recorded (its breaker may have opened).
package final class KeyScheduler: Sendable {
    package typealias Item = Claimer.Claimed

    private struct State {
        /// Waiting messages in claim order; nil where one was taken.
        var items: [Item?] = []
        var head = 0
        var count = 0
        var active: Set<String> = []
        /// Keys that failed lately: one message per slice, so their breaker sees each outcome.
        var cautious: Set<String> = []
        var closed = false

        /// One worker: the oldest waiting messages, each destination's in order (one
        /// per destination in a call that has several in flight, or while it fails).
        /// Nobody else takes, so only destinations held after a failure are skipped.
        mutating func takeAlone(size: Int, parallelism: Int) -> [Item] {
            var slice: [Item] = []
            var keys = Set<String>()
            let onePerKey = parallelism > 1 || !cautious.isEmpty
            let anyActive = !active.isEmpty
            var i = head
            while i < items.count && slice.count < size {
                defer { i += 1 }
                guard let item = items[i] else { continue }
                if anyActive && active.contains(item.key) { continue }
                if onePerKey && !keys.insert(item.key).inserted && (parallelism > 1 || cautious.contains(item.key)) { continue }
                slice.append(item)
                items[i] = nil
            }
            return slice
        }

        /// Several workers: a slice holds few destinations, so the waiting ones are
        /// spread over the workers (their share, at least one), and takes each
        /// one's messages in order; the destinations taken are held until done.
        mutating func takeShared(size: Int, parallelism: Int, workers: Int) -> [Item] {
            var waiting = Set<String>()
            for i in head..<items.count {
                if let item = items[i], !active.contains(item.key) { waiting.insert(item.key) }
            }
            let share = max(1, waiting.count / workers)
            var slice: [Item] = []
            var chosen = Set<String>()
            var i = head
            while i < items.count && slice.count < size {
                defer { i += 1 }
                guard let item = items[i], waiting.contains(item.key) else { continue }
                if chosen.contains(item.key) {
                    if parallelism > 1 || cautious.contains(item.key) { continue }
                } else {
                    if chosen.count >= share { continue }
                    chosen.insert(item.key)
                }
                slice.append(item)
                items[i] = nil
            }
            active.formUnion(chosen)
            return slice
        }

        mutating func compact() {
            while head < items.count && items[head] == nil { head += 1 }
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 1024 && head * 2 > items.count {
                items.removeFirst(head)
                head = 0
            }
        }
    }

    private let state = Mutex(State())
    private let wakeup = DispatchSemaphore(value: 0)
    private let workers: Int

    package init(workers: Int) { self.workers = workers }

    package func add(_ items: [Item]) {
        guard !items.isEmpty else { return }
        state.withLock { s in
            s.items.reserveCapacity(s.items.count + items.count)
            for item in items { s.items.append(item) }
            s.count += items.count
        }
        for _ in 0..<min(items.count, workers) { wakeup.signal() }
    }

    /// Waits for a slice of up to `size` messages; nil once closed.
    package func take(size: Int, parallelism: Int) -> [Item]? {
        while true {
            let slice = state.withLock { s -> [Item]? in
                if s.closed { return nil }
                let slice = workers > 1 ? s.takeShared(size: size, parallelism: parallelism, workers: workers)
                    : s.takeAlone(size: size, parallelism: parallelism)
                s.count -= slice.count
                s.compact()
                return slice
            }
            guard let slice else { return nil }
            if !slice.isEmpty { return slice }
            wakeup.wait()
        }
    }

    /// Whether several workers share the work (then `take` holds the keys it hands out).
    package var shared: Bool { workers > 1 }

    /// A worker has the outcomes of a slice of `keys`, `failed` among them: the
    /// failed wait until their outcomes are recorded (``done(_:)``), and the others
    /// may go on at once. Several workers hold the keys of a slice from its take;
    /// one worker alone holds only the failed, from now.
    package func finished(_ keys: Set<String>, failed: Set<String>) {
        if shared { done(keys.subtracting(failed)) } else { hold(failed) }
    }

    /// Holds `keys` until ``done(_:)``.
    private func hold(_ keys: Set<String>) {
        guard !keys.isEmpty else { return }
        state.withLock { $0.active.formUnion(keys) }
    }

    /// A worker is done with these keys: their waiting messages may go again.
    package func done(_ keys: Set<String>) {
        guard !keys.isEmpty else { return }
        let waiting = state.withLock { s -> Int in
            s.active.subtract(keys)
            return s.count
        }
        for _ in 0..<min(waiting, workers) { wakeup.signal() }
    }

    /// Marks `key` as failing lately (one message per slice) or not.
    package func setCautious(_ key: String, _ cautious: Bool) {
        state.withLock { s in
            if cautious { s.cautious.insert(key) } else { s.cautious.remove(key) }
        }
    }

    /// Takes back what waits for `key` (its breaker opened, or it was paused).
    package func withdraw(_ key: String) -> [Item] {
        state.withLock { s in
            var back: [Item] = []
            for i in s.head..<s.items.count {
                if let item = s.items[i], item.key == key {
                    back.append(item)
                    s.items[i] = nil
                }
            }
            s.count -= back.count
            s.compact()
            return back
        }
    }

    /// Takes back everything waiting.
    package func withdrawAll() -> [Item] {
        state.withLock { s in
            let back = s.items[s.head...].compactMap { $0 }
            s.items = []
            s.head = 0
            s.count = 0
            return back
        }
    }

    /// Ends the workers (after what they hold).
    package func close() {
        state.withLock { $0.closed = true }
        for _ in 0..<workers { wakeup.signal() }
    }
}

/// The schedulers of a run's lanes: the destinations of a config section that sets
/// `deadline` or `concurrency` have delivery workers of their own (a lane), so
/// however long they hang they hold no other destination's messages; the rest
/// share the first lane. Claimed messages are handed to their lane's
/// ``KeyScheduler``; what the run takes back or marks is asked of every lane (a
/// destination's messages are all in one).
package final class LaneSchedulers: WaitingMessages, Sendable {
    package typealias Item = Claimer.Claimed

    private let lanes: [KeyScheduler]
    private let lane: @Sendable (Item) -> Int

    package init(_ lanes: [KeyScheduler], lane: @escaping @Sendable (Item) -> Int) {
        self.lanes = lanes
        self.lane = lane
    }

    package func add(_ items: [Item]) {
        guard lanes.count > 1 else { return lanes[0].add(items) }
        var split = [[Item]](repeating: [], count: lanes.count)
        for item in items { split[min(max(0, lane(item)), lanes.count - 1)].append(item) }
        for (l, items) in zip(lanes, split) { l.add(items) }
    }

    /// Takes back what waits for `key` (its breaker opened, or it was paused).
    package func withdraw(_ key: String) -> [Item] {
        lanes.count == 1 ? lanes[0].withdraw(key) : lanes.flatMap { $0.withdraw(key) }
    }

    /// Takes back everything waiting.
    package func withdrawAll() -> [Item] { lanes.flatMap { $0.withdrawAll() } }

    /// Marks `key` as failing lately (one message per slice) or not.
    package func setCautious(_ key: String, _ cautious: Bool) {
        for l in lanes { l.setCautious(key, cautious) }
    }

    /// These keys' outcomes are recorded: their waiting messages may go again.
    package func done(_ keys: Set<String>) {
        for l in lanes { l.done(keys) }
    }

    package func close() {
        for l in lanes { l.close() }
    }
}

/// What settling a slice's outcomes asks of the messages waiting for a worker
/// (``OutcomeDesk/settle(_:_:run:into:)``): the run's ``Dispatcher``, or its
/// schedulers alone (a test's).
package protocol WaitingMessages: AnyObject {
    /// Takes back what waits for `key`.
    func withdraw(_ key: String) -> [Claimer.Claimed]
    /// Marks `key` as failing lately (one message per slice) or not.
    func setCautious(_ key: String, _ cautious: Bool)
    /// These keys' outcomes are recorded: their waiting messages may go again.
    func done(_ keys: Set<String>)
}
