import MsgKit

/// The destinations a claim scan (``ClaimScan``) holds, with why, what each left
/// behind and how it ends: a value, lent with the scan.
package struct ScanHolds: Sendable {
    package init() {}

    /// One destination held in this scan: why, what it left behind, and how it ends.
    package struct Hold: Sendable, Equatable {
        package var why: DestinationBook.Hold
        /// The lowest message it left behind in this scan: going back to just before
        /// it reads all of them again. None for a hold made where no message was read
        /// (an outcome's breaker or pause, a hint): ending such a hold starts the scan
        /// from the first message.
        package var from: ClaimPosition?
        /// Messages read and left in this scan.
        package var count = 0
        /// The furthest of its messages counted in ``count``: a scan that goes back
        /// part of the way (``ClaimScan/rewind(before:)``, ``ClaimScan/releaseFreed()``)
        /// reads some again.
        var countedTo: ClaimPosition?
        /// Held for the run's own messages (its share pending, its probe): only its
        /// own outcomes end it (``free(_:)``), so going back for another process's
        /// commit (``ClaimScan/rewind(before:)``) keeps it, and with it the first
        /// message it left, which may lie before that commit's floor.
        package var own = false
        /// Held because another claim held the destination at that moment (its lock),
        /// not because a message of it was in flight there: that claim's commit may
        /// write nothing of it, so going back for it goes back to the first message
        /// it left, not only to the commit's floor.
        package var locked = false
        /// The run's own outcome ended it (``free(_:)``): released at the next claim
        /// (``ClaimScan/releaseFreed()``).
        package var freed = false
        /// The store may skip its messages without reading them: held for another
        /// reason than a probe, at least once.
        package var skippable = false
    }

    /// The destinations held in this scan.
    package private(set) var held: [String: Hold] = [:]
    /// The earliest time a pause or a token wait ends: a run waits for those (within
    /// its patience), not for a breaker's cool-down.
    package private(set) var wake: Timestamp?
    /// The earliest time any hold ends by itself (a pause, a token, a breaker's
    /// cool-down, a suspension until a time): then the scan starts again, even in a
    /// queue nothing else changed (`flush --watch` keeps its scan).
    package private(set) var holdsEnd: Timestamp?

    /// Held destinations whose messages the store may skip without reading them.
    package var skippable: Set<String> {
        var keys = Set<String>(minimumCapacity: held.count)
        for (key, hold) in held where hold.skippable { keys.insert(key) }
        return keys
    }

    /// The holds the run's own outcomes ended.
    package var freed: Set<String> { Set(held.lazy.filter(\.value.freed).map(\.key)) }

    /// Holds `key` from the message at `from` (where it was read and left);
    /// `counting`: that message is counted among the held, once however often the
    /// scan goes back over it.
    mutating func hold(_ key: String, _ why: DestinationBook.Hold, from: ClaimPosition?, counting: Bool, own isOwn: Bool, locked isLocked: Bool) {
        var h = held[key] ?? Hold(why: why, from: from, own: isOwn, locked: isLocked)
        // Written behind the scan since (another process's commit, a floor).
        if let from, let first = h.from, from < first { h.from = from }
        if counting, let at = from, h.countedTo.map({ $0 < at }) ?? true {
            h.count += 1
            h.countedTo = at
        }
        if why != .probing { h.skippable = true }
        held[key] = h
        if let until = why.until { holdsEnd = min(holdsEnd ?? until, until) }
        switch why {
        case .paused(let until), .throttled(let until): wake = min(wake ?? until, until)
        default: break
        }
    }

    /// The run's own outcome ended what held `key` (its message in flight, its
    /// probe); a hold that ends by its time is not ended so.
    mutating func free(_ key: String) {
        guard held[key]?.why.until == nil else { return }
        held[key]?.freed = true
    }

    /// A message of `key` went back to the queue behind the scan: ending its hold
    /// starts the scan from the first message.
    mutating func putBehind(_ key: String) {
        held[key]?.from = nil
    }

    /// Forgets the holds the run's own outcomes ended.
    mutating func forgetFreed() {
        for key in freed { held[key] = nil }
    }

    /// Forgets the hold of `key`.
    mutating func release(_ key: String) {
        held[key] = nil
    }
}
