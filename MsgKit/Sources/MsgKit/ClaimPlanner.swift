/// Where a claim's scan is in FIFO order (`created_at`, then `id`).
public struct ClaimPosition: Sendable, Hashable, Comparable {
    public var createdAt: Timestamp
    public var id: String

    public init(createdAt: Timestamp, id: String) {
        self.createdAt = createdAt
        self.id = id
    }

    public static func < (a: ClaimPosition, b: ClaimPosition) -> Bool {
        a.createdAt != b.createdAt ? a.createdAt < b.createdAt : a.id < b.id
    }
}

/// What a claim (``Store/claim(_:_:)``) asks of a store.
public struct ClaimRequest: Sendable, Equatable {
    /// The records that may be taken, in FIFO order (its limit is not used).
    public var query: Query
    /// At most this many records taken.
    public var limit: Int
    /// Start after this position (where the claim before stopped); nil: from the first.
    public var after: ClaimPosition?
    /// Records read from the store at a time.
    public var chunk: Int

    public init(query: Query, limit: Int, after: ClaimPosition? = nil, chunk: Int = 256) {
        self.query = query
        self.limit = limit
        self.after = after
        self.chunk = chunk
    }
}

/// What a claim took, and where its scan stopped.
public struct ClaimResult: Sendable {
    /// The records taken, as stored, in FIFO order.
    public var taken: [EncodedMessage]
    /// The last record read; a claim that goes on starts after it.
    public var position: ClaimPosition?
    /// Whether the scan read the last record matching the query.
    public var reachedEnd: Bool

    public init(taken: [EncodedMessage], position: ClaimPosition?, reachedEnd: Bool) {
        self.taken = taken
        self.position = position
        self.reachedEnd = reachedEnd
    }
}

/// A record a claim may take, with the status it has in the store (a damaged
/// record's stand-in says `dead`; the store knows what it was).
public struct ClaimRow: Sendable {
    public var record: EncodedMessage
    public var status: Status

    public init(record: EncodedMessage, status: Status) {
        self.record = record
        self.status = status
    }

    /// Where the record stands in FIFO order.
    public var position: ClaimPosition { ClaimPosition(createdAt: record.message.createdAt, id: record.message.id) }
}

/// A record in flight (`sending`): what a claim needs to keep one message of a
/// destination in flight at a time.
public struct InFlight: Sendable, Equatable {
    public var id: String
    public var to: String

    public init(id: String, to: String) {
        self.id = id
        self.to = to
    }
}

/// A planner's answer about one record of a claim.
public enum ClaimAnswer: Sendable, Equatable {
    /// Store this record in its place (``EncodedMessage/init(updating:to:)`` keeps it
    /// cheap), and count it as taken.
    case take(EncodedMessage)
    /// Leave it alone and go on.
    case skip
    /// Leave it alone and read no more.
    case stop
}

/// Decides, inside one atomic step of a store, which records a claim takes and how
/// the state of their destinations changes (``ClaimLoop``).
///
/// Called in this order, all within one ``Store/claimSession(_:)``: ``begin(_:)``
/// once (it may ask the session for the records in flight); ``consider(_:in:)``
/// with each chunk of candidates in FIFO order, until it answers
/// ``ClaimAnswer/stop``, the limit is reached or none are left; ``finish()`` once,
/// whose states are stored in the same commit as the records taken. A damaged
/// record is given to ``consider(_:in:)`` too, and stored as such (``Store``,
/// requirement 10) whatever the answer.
public protocol ClaimPlanner: AnyObject {
    /// The claim begins. A claim that failed may be made again with the same
    /// planner (the host rides out a store outage so): then it begins again, and
    /// starts afresh, keeping nothing of the attempt that failed.
    func begin(_ session: any ClaimSession) throws(MsgError)
    /// Recipients whose records the store may leave out of the candidates (a
    /// destination known to be waiting): read before each chunk.
    var skipping: Set<String> { get }
    /// One answer per candidate, in order; the planner reads the states of their
    /// destinations from `session` as it needs them.
    func consider(_ rows: [ClaimRow], in session: any ClaimSession) throws(MsgError) -> [ClaimAnswer]
    /// The destination states to store in the same commit: a key's new text, or nil
    /// to remove it.
    func finish() -> [String: String?]
}
