import MsgKit

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
/// (``OutcomeDesk/settle(_:_:notes:scan:into:)``): the run's ``Dispatcher``, or its
/// schedulers alone (a test's).
package protocol WaitingMessages: AnyObject {
    /// Takes back what waits for `key`.
    func withdraw(_ key: String) -> [Claimer.Claimed]
    /// Marks `key` as failing lately (one message per slice) or not.
    func setCautious(_ key: String, _ cautious: Bool)
    /// These keys' outcomes are recorded: their waiting messages may go again.
    func done(_ keys: Set<String>)
}
