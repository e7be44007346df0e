import MsgKit

/// The destinations a claim scan (``ClaimScan``) holds, with why, what each left
/// behind and how it ends: a value, lent with the scan.
package struct ScanHolds: Sendable {
    package init() {}

    /// Destinations held in this scan, with why.
    package private(set) var held: [String: DestinationBook.Hold] = [:]
    /// Messages read and left per held destination in this scan.
    package private(set) var heldCount: [String: Int] = [:]
    /// Per held destination, the furthest of its messages counted in ``heldCount``:
    /// a scan that goes back part of the way (``ClaimScan/rewind(before:)``,
    /// ``ClaimScan/releaseFreed()``) reads some again, and a destination released
    /// there counts afresh when it is held again.
    private var countedTo: [String: ClaimPosition] = [:]
    /// Held destinations whose messages the store may skip without reading them.
    package private(set) var skippable: Set<String> = []
    /// Per held destination, the lowest message it left behind in this scan: going
    /// back to just before it reads all of them again. None for a hold made where no
    /// message was read (an outcome's breaker or pause, a hint): ending such a hold
    /// starts the scan from the first message.
    private(set) var heldFrom: [String: ClaimPosition] = [:]
    /// Holds the run's own outcomes ended (``free(_:)``), released at the next claim
    /// (``ClaimScan/releaseFreed()``).
    package private(set) var freed: Set<String> = []
    /// Held for the run's own messages (its share pending, its probe): only its own
    /// outcomes end those (``free(_:)``), so going back for another process's commit
    /// (``ClaimScan/rewind(before:)``) keeps them, and with them the first message
    /// they left, which may lie before that commit's floor.
    private(set) var own: Set<String> = []
    /// Held because another claim held the destination at that moment (its lock),
    /// not because a message of it was in flight there: that claim's commit may write
    /// nothing of it, so going back for it goes back to the first message such a
    /// hold left, not only to the commit's floor.
    private(set) var locked: Set<String> = []
    /// The earliest time a pause or a token wait ends: a run waits for those (within
    /// its patience), not for a breaker's cool-down.
    package private(set) var wake: Timestamp?
    /// The earliest time any hold ends by itself (a pause, a token, a breaker's
    /// cool-down, a suspension until a time): then the scan starts again, even in a
    /// queue nothing else changed (`flush --watch` keeps its scan).
    package private(set) var holdsEnd: Timestamp?

    /// Holds `key` from the message at `from` (where it was read and left);
    /// `counting`: that message is counted among the held, once however often the
    /// scan goes back over it.
    mutating func hold(_ key: String, _ why: DestinationBook.Hold, from: ClaimPosition?, counting: Bool, own isOwn: Bool, locked isLocked: Bool) {
        if held[key] == nil {
            held[key] = why
            if let from { heldFrom[key] = from }
            if isOwn { own.insert(key) }
            if isLocked { locked.insert(key) }
        } else if let from, let first = heldFrom[key], from < first {
            // Written behind the scan since (another process's commit, a floor).
            heldFrom[key] = from
        }
        if counting, let at = from, countedTo[key].map({ $0 < at }) ?? true {
            heldCount[key, default: 0] += 1
            countedTo[key] = at
        }
        if why != .probing { skippable.insert(key) }
        if let until = why.until { holdsEnd = min(holdsEnd ?? until, until) }
        switch why {
        case .paused(let until), .throttled(let until): wake = min(wake ?? until, until)
        default: break
        }
    }

    /// The run's own outcome ended what held `key` (its message in flight, its
    /// probe); a hold that ends by its time is not ended so.
    mutating func free(_ key: String) {
        guard let why = held[key], why.until == nil else { return }
        freed.insert(key)
    }

    /// A message of `key` went back to the queue behind the scan: ending its hold
    /// starts the scan from the first message.
    mutating func putBehind(_ key: String) {
        heldFrom[key] = nil
    }

    /// Forgets the holds the run's own outcomes ended.
    mutating func forgetFreed() {
        for key in freed { release(key) }
        freed = []
    }

    /// Forgets the hold of `key`.
    mutating func release(_ key: String) {
        held[key] = nil
        heldFrom[key] = nil
        heldCount[key] = nil
        countedTo[key] = nil
        own.remove(key)
        locked.remove(key)
        skippable.remove(key)
    }
}
