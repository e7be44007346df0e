import MsgKit

/// Where a run's claims are in the queue, and the destinations its scan holds.
///
/// Claims go through the queue in FIFO order, each starting where the one before
/// stopped, so the messages of a waiting destination are read once per scan, not
/// once per claim: 5,000 messages behind an open breaker, or a million, cost one
/// pass. A destination held in this scan stays held for every later message of it
/// (that keeps its FIFO order) until the scan starts again from the first message,
/// which it does when one of those holds may have ended: the run's own outcome for
/// it, the end of a pause, cool-down, token wait or suspension, or a message
/// becoming due. When only another process changed the queue, and the store says
/// where (``JournalStore/changeFloor(since:)``), it goes back only that far (``rewind(before:)``).
///
/// A value of the run's state machine (``FlushRun``), which alone changes it: a
/// claim's planner works on a copy, which the run takes back only when the claim
/// commits, so a claim made again after a store outage starts from the scan as it
/// was.
package struct ClaimScan: Sendable {
    package init() {}

    /// The last message read; the next claim starts after it. Nil: from the first.
    package private(set) var position: ClaimPosition?
    /// A claim of this scan read to the end of the queue: everything after its
    /// position is held or was taken, so until the scan starts again (a hold may
    /// have ended, the queue changed, a time came) a claim would only walk past
    /// the held destinations' messages again to find nothing: 150 ms a claim with a
    /// million of them, once a second and at every change in `flush --watch`.
    package private(set) var exhausted = false
    /// The destinations held in this scan.
    package private(set) var holds = ScanHolds()
    /// Records in flight in other processes: id to destination, as last read.
    var foreign: [String: String] = [:] {
        didSet { foreignKeys = Set(foreign.values) }
    }
    private(set) var foreignKeys: Set<String> = []
    /// The store's change token when this scan last claimed.
    package var token: UInt64?
    /// The store's mark of commits (``JournalStore/changeFloor(since:)``) as of this scan's last look:
    /// another process's commits since then are asked about from there.
    var floorMark: Int64?
    /// The earliest time a message not due yet becomes due (from the store).
    package var nextDue: Timestamp?

    /// A claim read to the end of the queue.
    package mutating func readToEnd() { exhausted = true }

    /// Holds `key` for the rest of the scan from the message at `from` (where it was
    /// read and left); `counting`: that message is counted among the held, once
    /// however often the scan goes back over it.
    package mutating func hold(_ key: String, _ why: DestinationBook.Hold, from: ClaimPosition? = nil, counting: Bool = true, own isOwn: Bool = false,
                               locked isLocked: Bool = false) {
        holds.hold(key, why, from: from, counting: counting, own: isOwn, locked: isLocked)
    }

    /// The scan went as far as `position`.
    package mutating func advance(to position: ClaimPosition?) {
        if let position { self.position = position }
    }

    /// Starts the scan again from the first message, every hold forgotten.
    package mutating func rewind() {
        position = nil
        exhausted = false
        holds = ScanHolds()
        floorMark = nil
    }

    /// Takes up where a scan of another process stopped (``ScanHint``): this one is
    /// fresh, and `held` are holds that still stand.
    mutating func resume(at position: ClaimPosition?, exhausted: Bool, held: [(String, DestinationBook.Hold)], nextDue: Timestamp?) {
        rewind()
        self.position = position
        self.exhausted = exhausted
        for (key, why) in held { hold(key, why) }
        self.nextDue = nextDue
    }

    /// Whether nothing was read yet: no position, no hold, no mark.
    package var isFresh: Bool { position == nil && !exhausted && holds.held.isEmpty && floorMark == nil }

    /// Goes back to just before `floor`, the lowest message other processes' commits
    /// wrote since the scan last looked (``JournalStore/changeFloor(since:)``), when no destination state
    /// changed: the holds by state (suspended, breaker, pause, throttle) stand as
    /// they were, for those states did not change; a destination held because its
    /// message was in flight in another process is looked at again, as that message
    /// may have had its outcome, which is at or after `floor`, and so before any of
    /// its destination's messages left behind. A probe of the run's own ends only by
    /// its outcome (``free(_:)``).
    /// - Returns: false when a hold to release has no first message on record: then
    ///   the caller starts the scan from the first message.
    package mutating func rewind(before floor: ClaimPosition) -> Bool {
        // Busy in another process: read again (the planner holds it again where that
        // still holds). Held for the run's own share pending: kept, for its messages
        // left may lie before `floor`, and only its own outcome frees it.
        let released = holds.held.filter { $0.value.why == .busy && !$0.value.own }
        var back = floor
        for (_, hold) in released where hold.locked {
            guard let first = hold.from else { return false }
            back = min(back, first)
        }
        for key in released.keys { holds.release(key) }
        goBack(before: back)
        return true
    }

    /// The run's own outcome ended what held `key` (its message in flight, its
    /// probe): at the next claim the scan goes back to the first message it left
    /// behind. A hold that ends by its time is not ended so.
    package mutating func free(_ key: String) { holds.free(key) }

    /// A message of `key` went back to the queue behind the scan (put back as it
    /// was): ending its hold starts the scan from the first message.
    package mutating func putBehind(_ key: String) { holds.putBehind(key) }

    /// Releases the holds ``free(_:)`` ended and goes back to just before the first
    /// message any of them left behind; the other holds stand. Every message of
    /// those destinations the scan left is at or after that point, so FIFO holds: a
    /// flush with a million waiting behind destinations busy elsewhere walks them
    /// once, not after each of its own outcomes.
    /// - Returns: false when one of them has no such message on record: then the
    ///   caller starts the scan from the first message.
    package mutating func releaseFreed() -> Bool {
        var lowest: ClaimPosition?
        var any = false
        for (_, hold) in holds.held where hold.freed {
            guard let first = hold.from else { return false }
            lowest = min(lowest ?? first, first)
            any = true
        }
        guard any else { return true }
        holds.forgetFreed()
        if let lowest { goBack(before: lowest) }
        return true
    }

    /// The next claim starts at the first position of `at`'s millisecond (no id is
    /// compared), unless the scan is not that far yet.
    private mutating func goBack(before at: ClaimPosition) {
        exhausted = false
        let before = ClaimPosition(createdAt: at.createdAt, id: "")
        if let position, before < position { self.position = before }
    }

    /// How the scan goes on before the next claim.
    package enum Restart: Equatable {
        /// Where it stopped.
        case goOn
        /// From the first message: a time came (a hold's end, a message due).
        case fromFirst
        /// Another process committed (and nothing else happened): from where its
        /// commits changed the queue, when the store can say (``JournalStore/changeFloor(since:)``).
        case changedElsewhere
    }

    /// Whether the scan must start again before the next claim: a hold's time or a
    /// message's due time came, or another process changed the queue (`token`
    /// differs, or the store cannot tell). The holds the run's own outcomes ended
    /// are the caller's to release (``releaseFreed()``).
    package func restart(token now: UInt64?, at time: Timestamp) -> Restart {
        // At the first message already, unless a claim from there read to the end.
        if position == nil && !exhausted { return .goOn }
        if let wake = holds.wake, wake <= time { return .fromFirst }
        if let holdsEnd = holds.holdsEnd, holdsEnd <= time { return .fromFirst }
        if let nextDue, nextDue <= time { return .fromFirst }
        if now == nil || now != token { return .changedElsewhere }
        return .goOn
    }
}

/// The destinations a claim scan (``ClaimScan``) holds, with why, what each left
/// behind and how it ends: a value, part of the scan.
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
