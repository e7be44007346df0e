/// A store that says where in FIFO order the commits since a mark changed the
/// queue (``StoreCapabilities/floors``), so a claim scan kept from run to run (`flush --watch`) goes back
/// only that far when another process commits, instead of to the first message: a
/// million waiting behind suspended destinations are then walked once, not once a
/// change.
///
/// ## Implementation requirements
/// 1. **Every commit counts.** Each commit that inserts, changes or deletes a
///    record leaves, in the same commit, a FIFO position (`created_at`, then `id`)
///    at or before the lowest of the records it wrote (the first position of its
///    millisecond will do); a commit that writes a destination state leaves
///    ``Floor/all``. Positions are the records' own, as stored. An answer may
///    name again commits an earlier answer named (a floor further back than
///    needed: PostgreSQL's marks are conservative while other transactions are
///    open); it never leaves one out.
/// 2. **Marks only grow.** A mark names the store's commits up to it; a later
///    answer's mark is never lower.
/// 3. **Forgetting is safe.** A store may forget old commits; asked about a mark
///    older than what it kept, it answers ``Floor/all``.
/// 4. **Own commits too.** The commits of this handle count like any other's.
/// 5. **Hints are not changes.** ``saveScanHint(_:_:)`` keeps, for the next process,
///    where a claim scan stopped and what it held (a `flush` run from cron every
///    minute during an outage then starts where the last one stopped). Saving one
///    writes no floor and changes no record or state; the last one saved for a
///    `kind` wins; a hint may be lost (the host then walks the queue from the start).
///    Its text and its validity are the host's.
public protocol ChangeFloors: AnyObject {
    /// The store's mark now and, when `mark` is given, how far back the commits
    /// after it wrote (requirement 1). - Throws: `storeIO`, `corrupt`.
    func changeFloor(since mark: Int64?) throws(MsgError) -> ChangeFloor
    /// The hint last saved for `kind`, or nil. - Throws: `storeIO`, `corrupt`.
    func scanHint(_ kind: String) throws(MsgError) -> String?
    /// Saves `hint` for `kind`, replacing the one there. - Throws: `storeIO`, `corrupt`.
    func saveScanHint(_ kind: String, _ hint: String) throws(MsgError)
}

/// What ``ChangeFloors/changeFloor(since:)`` answers.
public struct ChangeFloor: Sendable, Equatable {
    /// How far back the commits since the mark reach.
    public enum Floor: Sendable, Equatable {
        /// No commit since the mark wrote a record or a state.
        case none
        /// At or before the lowest position a commit since the mark wrote.
        case from(ClaimPosition)
        /// Anything may have changed: a destination state, or commits forgotten.
        case all
    }

    /// The store's mark now, to ask from next time.
    public var mark: Int64
    /// Since the mark asked about (``Floor/all`` when none was).
    public var floor: Floor

    public init(mark: Int64, floor: Floor) {
        self.mark = mark
        self.floor = floor
    }
}
