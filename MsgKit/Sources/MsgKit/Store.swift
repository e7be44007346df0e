/// Durable storage for message records: the queue (docs/DESIGN.md 4 and 6).
///
/// A store plugin registers a factory for its URL scheme (`json:`, `sqlite:`);
/// the host opens a store through ``PluginLoader`` and uses only this protocol.
///
/// ## Implementation requirements
/// 1. **Durable before returning.** ``add(_:)``, ``update(_:)``, ``remove(_:)`` and
///    ``claimSession(_:)`` return only after their changes are on stable storage
///    (fsync or an equivalent commit), each call in one atomic commit: after a crash
///    either all of its changes are there or none. The host acknowledges records to
///    users right after, and batches through it (group commit).
/// 2. **Compare-and-set.** ``update(_:)`` applies a change only if the stored status
///    still equals ``Change/expected``; a ``claimSession(_:)`` selects and changes in
///    one atomic step. Two processes can then never both move one message on.
/// 3. **Several processes.** Two processes may open the same store at once; each
///    call sees the other's committed changes.
/// 4. **FIFO.** Listing order is `created_at`, then `id`.
/// 5. **Errors** are ``MsgError``: `storeIO` (74) for I/O, `corrupt` (74) for a damaged
///    file, never a crash or a silently emptied queue. Files a store creates are
///    readable by their owner only (0600).
/// 6. **Access.** Opened for ``StoreAccess/read``, a store creates, migrates, repairs
///    and moves nothing, and a missing store is an error (`storeIO`) saying it does
///    not exist. Opened for ``StoreAccess/write``, it creates what is missing. A
///    damaged file is set aside, never emptied, and only when it is the store's own.
/// 7. **A damaged record is not a damaged store.** Stored text that no longer reads
///    as a record (``EncodedMessage/init(stored:historyOffset:)`` throws) is given by
///    ``get(_:)``, ``list(_:_:)`` and a claim's candidates as
///    ``EncodedMessage/damaged(id:to:createdAt:text:error:now:)``; a claim stores it
///    so, in the same commit (``ClaimLoop``). Every other record keeps flowing.
/// 8. **Capabilities at open.** What a store does beyond these calls it declares in
///    ``capabilities``, the same value for the life of the handle; the host asks
///    nothing else of it (no casts) and does without what is not there.
public protocol Store: AnyObject {
    /// What this store does beyond the core calls (requirement 8): the host reads it
    /// once, when it opens the store.
    var capabilities: StoreCapabilities { get }

    /// Stores the records whose id is not stored yet, in one durable commit. A store
    /// that keeps JSON text should keep `json` as it is: it is the canonical text.
    /// - Returns: one result per record, in order: the record now stored under its
    ///   id and whether this call inserted it (an id already stored is never stored twice).
    /// - Throws: `storeIO`, `corrupt`.
    func add(_ records: [EncodedMessage]) throws(MsgError) -> [AddResult]

    /// The record with `id`, as stored, or nil. - Throws: `storeIO`, `corrupt`.
    func get(_ id: String) throws(MsgError) -> EncodedMessage?

    /// Calls `body` with each record matching `query`, as stored, in FIFO order, until
    /// it returns false.
    /// - Throws: `storeIO`, `corrupt`, or what `body` throws.
    func list(_ query: Query, _ body: (EncodedMessage) throws(MsgError) -> Bool) throws(MsgError)

    /// The number of records matching `query` (its limit applies). - Throws: `storeIO`, `corrupt`.
    func count(_ query: Query) throws(MsgError) -> Int

    /// Replaces records, each only if its stored status equals the change's `expected`,
    /// all in one durable commit.
    /// - Returns: per change, whether it was applied (false: missing, or the status differed).
    /// - Throws: `storeIO`, `corrupt`.
    func update(_ changes: [Change]) throws(MsgError) -> [Bool]

    /// Deletes records, each only if its status is in the removal's `statuses` (any when nil),
    /// in one durable commit.
    /// - Returns: per removal, whether a record was deleted.
    /// - Throws: `storeIO`, `corrupt`.
    func remove(_ removals: [Removal]) throws(MsgError) -> [Bool]

    /// Runs `body` as one atomic step that no other process interleaves with (or,
    /// where the session has ``ClaimSession/locks``, none on the destinations it
    /// holds): what it stores through the session is committed, durably, when it
    /// returns, and nothing when it throws. The claim itself is ``ClaimLoop``, the
    /// same for every store.
    /// - Throws: `storeIO`, `corrupt`, or what `body` throws.
    func claimSession<R>(_ body: (any ClaimSession) throws(MsgError) -> R) throws(MsgError) -> R

    /// The destination states stored (key to text) for `keys`, or all of them when
    /// nil, for `msg destinations` and `msg queue show`.
    /// - Throws: `storeIO`, `corrupt`.
    func destinationStates(_ keys: Set<String>?) throws(MsgError) -> [String: String]

    /// Lines for the user since the last call, one fact each, such as a torn last
    /// line of a file that was cut off and kept aside: the host says them on
    /// standard error (after opening the store and after each claim). The default
    /// is none.
    func takeNotices() -> [String]
}

extension Store {
    public func takeNotices() -> [String] { [] }

    /// Stores messages, encoding them first. See ``add(_:)-([EncodedMessage])``.
    /// - Throws: `storeIO`, `corrupt`.
    public func add(_ messages: [Message]) throws(MsgError) -> [AddResult] {
        try add(messages.map { EncodedMessage($0) })
    }
}

/// The outcome of adding one message.
public struct AddResult: Sendable, Equatable {
    /// The record stored under the id (the existing one when not inserted).
    public var message: Message
    /// Whether this call stored it.
    public var inserted: Bool
    /// Makes a result.
    public init(message: Message, inserted: Bool) {
        self.message = message
        self.inserted = inserted
    }
}

/// A compare-and-set replacement of one record.
public struct Change: Sendable, Equatable {
    /// The new record, encoded (its id names the record to replace).
    public var record: EncodedMessage
    /// The status the stored record must have for the change to apply.
    public var expected: Status
    /// The new record.
    public var message: Message { record.message }
    /// Makes a change, encoding `message`.
    public init(_ message: Message, expected: Status) {
        self.init(EncodedMessage(message), expected: expected)
    }
    /// Makes a change from an already encoded record.
    public init(_ record: EncodedMessage, expected: Status) {
        self.record = record
        self.expected = expected
    }
}

/// A conditional deletion of one record.
public struct Removal: Sendable, Equatable {
    /// The id to delete.
    public var id: String
    /// The statuses it may have to be deleted; nil for any.
    public var statuses: Set<Status>?
    /// Makes a removal.
    public init(id: String, statuses: Set<Status>? = nil) {
        self.id = id
        self.statuses = statuses
    }
}

/// Which records a listing, count or claim is about. Every filter set must match.
public struct Query: Sendable, Equatable {
    /// Only these statuses (all when nil).
    public var statuses: Set<Status>?
    /// Only this recipient.
    public var to: String?
    /// Only records created at or after this time.
    public var since: Timestamp?
    /// Only records created before this time.
    public var until: Timestamp?
    /// Only records due by this time: `not_before` and `next_attempt_at` unset or not later.
    public var dueBy: Timestamp?
    /// Only records whose lease ended before this time, or that have none.
    public var leaseEndedBy: Timestamp?
    /// Only records updated at or before this time.
    public var updatedBy: Timestamp?
    /// Only these ids.
    public var ids: Set<String>?
    /// At most this many records.
    public var limit: Int?

    /// A query; every argument left nil matches everything.
    public init(statuses: Set<Status>? = nil, to: String? = nil, since: Timestamp? = nil, until: Timestamp? = nil,
                dueBy: Timestamp? = nil, leaseEndedBy: Timestamp? = nil, updatedBy: Timestamp? = nil,
                ids: Set<String>? = nil, limit: Int? = nil) {
        self.statuses = statuses
        self.to = to
        self.since = since
        self.until = until
        self.dueBy = dueBy
        self.leaseEndedBy = leaseEndedBy
        self.updatedBy = updatedBy
        self.ids = ids
        self.limit = limit
    }

    /// Whether `m` passes every filter (the limit aside). Stores that keep records
    /// in memory use this; stores with an index must give the same answers.
    public func matches(_ m: Message) -> Bool {
        if let statuses, !statuses.contains(m.status) { return false }
        if let to, m.to != to { return false }
        if let since, m.createdAt < since { return false }
        if let until, m.createdAt >= until { return false }
        if let dueBy, let due = m.dueAt, due > dueBy { return false }
        if let leaseEndedBy, let lease = m.lease, lease.until >= leaseEndedBy { return false }
        if let updatedBy, m.updatedAt > updatedBy { return false }
        if let ids, !ids.contains(m.id) { return false }
        return true
    }

    /// FIFO order: `created_at`, then `id`.
    public static func fifo(_ a: Message, _ b: Message) -> Bool {
        a.createdAt != b.createdAt ? a.createdAt < b.createdAt : a.id < b.id
    }
}
