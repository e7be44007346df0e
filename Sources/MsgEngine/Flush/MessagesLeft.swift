/// Which messages runs added together (a watch) left failing, so that their summary
/// counts each message once, by what it is left as: a message tried fourteen
/// times and still failing is one left to retry, not fourteen deferred.
struct MessagesLeft: Sendable {
    /// Failed at their last attempt, waiting for a retry.
    private(set) var failing: Set<String> = []
    /// Sent or dead in this run: they leave the failing of the runs before.
    private var settled: Set<String> = []

    /// Notes that message `id` was left failing, or was settled (sent, dead).
    mutating func note(_ id: String, failing left: Bool) {
        if left {
            failing.insert(id)
            settled.remove(id)
        } else {
            settled.insert(id)
            failing.remove(id)
        }
    }

    /// Adds a later run's.
    mutating func add(_ later: MessagesLeft) {
        failing.subtract(later.settled)
        failing.formUnion(later.failing)
    }
}
