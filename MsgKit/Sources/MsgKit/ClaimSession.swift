/// One claim's atomic step in a store (``Store/claimSession(_:)``): no other
/// process changes the queue between the first read and the commit (or, for a
/// session with ``locks``, the destinations it holds), and what
/// is stored through ``store(_:states:)`` is committed together when the step ends.
///
/// A store implements these reads and one write; the claim itself, the same for
/// every store, is ``ClaimLoop``.
///
/// ## Implementation requirements
/// 1. **FIFO.** ``candidates(_:after:skipping:limit:)`` gives records matching the
///    query strictly after `position`, in FIFO order (`created_at`, then `id`).
/// 2. **Skipping is an optimisation.** A store may leave out the records whose
///    recipient is in `skipping` (with an index that lets it skip them cheaply), or
///    give them anyway; the planner skips them either way.
/// 3. **Damaged records** are given as their stand-ins
///    (``EncodedMessage/damaged(id:to:createdAt:text:error:now:)``), with the
///    status the store holds for them.
/// 4. **In flight.** ``inFlight()`` gives the id and recipient of every record
///    `sending`, or nil when this store handle knows that no other process has
///    changed the queue since its last claim (then the caller's own knowledge is
///    current): a store that cannot tell always gives the list.
/// 5. **Per key.** ``states(_:)`` reads only the states asked for (a store may read
///    them all when there are few).
/// 6. **Compare-and-set.** ``store(_:states:)`` applies each change only if the
///    stored status still equals its `expected`, and writes the states, all in the
///    session's one commit.
/// 7. **Locks.** ``locks`` is the session's ``DestinationLocks`` when several
///    processes claim at once on destinations they hold (PostgreSQL), or nil when a
///    session is one claim at a time on the whole store (the default).
public protocol ClaimSession: AnyObject {
    /// This session's destination locks, or nil (requirement 7).
    var locks: (any DestinationLocks)? { get }

    /// The records in flight, or nil when none can have changed since this handle's
    /// last claim (requirement 4).
    /// - Throws: `storeIO`, `corrupt`.
    func inFlight() throws(MsgError) -> [InFlight]?

    /// The record with `id`, as stored, or nil. - Throws: `storeIO`, `corrupt`.
    func record(_ id: String) throws(MsgError) -> EncodedMessage?

    /// Whether any destination state is stored at all: a claim over a queue with
    /// none reads none. - Throws: `storeIO`, `corrupt`.
    func hasStates() throws(MsgError) -> Bool

    /// The stored states of `keys` that have one (key to text).
    /// - Throws: `storeIO`, `corrupt`.
    func states(_ keys: Set<String>) throws(MsgError) -> [String: String]

    /// Up to `limit` records matching `query` after `position`, in FIFO order.
    /// - Throws: `storeIO`, `corrupt`.
    func candidates(_ query: Query, after position: ClaimPosition?, skipping: Set<String>, limit: Int) throws(MsgError) -> [ClaimRow]

    /// Stores changed records (each only if its stored status is still
    /// `expected`) and destination states (nil removes one).
    /// - Returns: per change, whether it was applied.
    /// - Throws: `storeIO`, `corrupt`.
    func store(_ changes: [Change], states: [String: String?]) throws(MsgError) -> [Bool]
}

extension ClaimSession {
    public var locks: (any DestinationLocks)? { nil }
}
