/// What a per-destination claim (``Store/claim(_:_:)``) asks of a store.
public struct ClaimRequest: Sendable, Equatable {
    /// The records that may be taken, in FIFO order (its limit is not used).
    public var query: Query
    /// At most this many records taken.
    public var limit: Int
    /// At most this many records of `query` read before the claim stops.
    public var scanLimit: Int
    /// The statuses of records in flight, shown to the planner first: `sending`.
    public var busy: Set<Status>

    public init(query: Query, limit: Int, scanLimit: Int, busy: Set<Status> = [.sending]) {
        self.query = query
        self.limit = limit
        self.scanLimit = scanLimit
        self.busy = busy
    }
}

/// A planner's answer about one record of a claim.
public enum ClaimAnswer: Sendable, Equatable {
    /// Store this record in its place, and count it as taken.
    case take(Message)
    /// Leave it alone and go on.
    case skip
    /// Leave it alone and read no more.
    case stop
}

/// Decides, inside one atomic step of a store, which records a claim takes and how
/// the state of their destinations changes (``Store/claim(_:_:)``).
///
/// The store calls, in this order and all within one commit that no other process
/// can interleave with: ``begin(states:)`` once with every destination state stored;
/// ``busy(id:to:record:)`` with each record whose status is in ``ClaimRequest/busy`` (FIFO);
/// ``consider(_:)`` with each record matching ``ClaimRequest/query`` (FIFO) until
/// it answers ``ClaimAnswer/stop``, ``ClaimRequest/limit`` records are taken or
/// ``ClaimRequest/scanLimit`` are read; then ``finish()``, whose states it stores.
/// A damaged record is given to ``consider(_:)`` too, and stored as such (Store,
/// requirement 10) whatever the answer.
public protocol ClaimPlanner: AnyObject {
    /// Every stored destination state: key to the planner's own text.
    func begin(states: [String: String]) throws(MsgError)
    /// A record in flight: its id, its recipient, and the whole record, decoded only
    /// when the planner asks (a claim sees every record in flight, often its own).
    func busy(id: String, to: String, record: () -> Message)
    /// A record the claim may take.
    func consider(_ m: Message) throws(MsgError) -> ClaimAnswer
    /// The destination states to store in the same commit: a key's new text, or nil
    /// to remove it.
    func finish() -> [String: String?]
}
