import MsgKit

/// Where a run's claims are in the queue, and the destinations its scan holds.
///
/// Claims go through the queue in FIFO order, each starting where the one before
/// stopped, so the messages of a waiting destination are read once per scan, not
/// once per claim: 5,000 messages behind an open breaker, or a million, cost one
/// pass. A destination held in this scan stays held for every later message of it
/// (that keeps its FIFO order) until the scan starts again from the first message,
/// which it does when one of those holds may have ended: the run's own outcome for
/// it, the end of a pause, cool-down or token wait, another process changing the
/// queue, or a message becoming due.
final class ClaimScan {
    /// The last message read; the next claim starts after it. Nil: from the first.
    private(set) var position: ClaimPosition?
    /// Destinations held in this scan, with why.
    private(set) var held: [String: DestinationBook.Hold] = [:]
    /// Messages read and left per held destination in this scan.
    private(set) var heldCount: [String: Int] = [:]
    /// Held destinations whose messages the store may skip without reading them.
    private(set) var skippable: Set<String> = []
    /// The earliest time a pause or a token wait of this scan ends: a run waits for
    /// those (within its patience), not for a breaker's cool-down.
    private(set) var wake: Timestamp?
    /// The earliest time any hold of this scan ends by itself (a pause, a token, a
    /// breaker's cool-down, a suspension until a time): then the scan starts again,
    /// even in a queue nothing else changed (`flush --watch` keeps its scan).
    private(set) var holdsEnd: Timestamp?
    /// Records in flight in other processes: id to destination, as last read.
    var foreign: [String: String] = [:] {
        didSet { foreignKeys = Set(foreign.values) }
    }
    private(set) var foreignKeys: Set<String> = []
    /// The store's change token when this scan last claimed.
    var token: UInt64?
    /// A claim of this scan read to the end of the queue: everything after its
    /// position is held or was taken, so until the scan starts again (a hold may
    /// have ended, the queue changed, a time came) a claim would only walk past
    /// the held destinations' messages again to find nothing: 150 ms a claim with a
    /// million of them, once a second and at every change in `flush --watch`.
    private(set) var exhausted = false

    /// A claim read to the end of the queue.
    func readToEnd() { exhausted = true }
    /// The earliest time a message not due yet becomes due (from the store).
    var nextDue: Timestamp?

    /// Holds `key` for the rest of the scan.
    func hold(_ key: String, _ why: DestinationBook.Hold, counting: Bool) {
        if held[key] == nil { held[key] = why }
        if counting { heldCount[key, default: 0] += 1 }
        if why != .probing { skippable.insert(key) }
        if let until = why.until { holdsEnd = min(holdsEnd ?? until, until) }
        switch why {
        case .paused(let until), .throttled(let until): wake = min(wake ?? until, until)
        default: break
        }
    }

    /// The scan went as far as `position`.
    func advance(to position: ClaimPosition?) {
        if let position { self.position = position }
    }

    /// Starts the scan again from the first message, every hold forgotten.
    func rewind() {
        position = nil
        exhausted = false
        held = [:]
        heldCount = [:]
        skippable = []
        wake = nil
        holdsEnd = nil
    }

    /// Whether the scan must start again before the next claim: a hold may have
    /// ended (`freed`: the run's own outcome for a held destination), another
    /// process changed the queue (`token` differs, or the store cannot tell), or a
    /// time came.
    func mustRewind(token now: UInt64?, freed: Bool, at time: Timestamp) -> Bool {
        // At the first message already, unless a claim from there read to the end.
        if position == nil && !exhausted { return false }
        if freed { return true }
        if now == nil || now != token { return true }
        if let wake, wake <= time { return true }
        if let holdsEnd, holdsEnd <= time { return true }
        if let nextDue, nextDue <= time { return true }
        return false
    }
}
