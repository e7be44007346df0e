/// A store that keeps figures with every change (``StoreCapabilities/counting``),
/// so `msg metrics`, `queue stats` and `msg destinations` read a few counters
/// instead of every record.
///
/// ## Implementation requirements
/// 1. **With the change.** The ``Tally`` and the counts by creation time are kept in
///    the same commit as each change they count; every figure of one answer is read
///    from the same committed state.
/// 2. **Strictly after.** For each time in `times`, ``created(after:)`` gives the
///    records of each status whose `created_at` is later than it (not equal), then
///    all the records of that status. A status with none may be left out.
/// 3. **Nil** when the store cannot tell without reading the records (then the host
///    reads them), never a guess.
public protocol StoreCounting: AnyObject {
    /// The figures kept with every change (``Tally``), with the records queued or
    /// failed not yet due by recipient and the oldest due one not to a recipient in
    /// `excluded`, all read without decoding records; nil when they are not whole.
    /// - Throws: `storeIO`, `corrupt`.
    func counts(now: Timestamp, excluding excluded: Set<String>) throws(MsgError) -> StoreCounts?

    /// Per status: the records created after each of `times` (in their order), then
    /// all of them (`times.count + 1` figures); nil when not known.
    /// - Throws: `storeIO`, `corrupt`.
    func created(after times: [Timestamp]) throws(MsgError) -> [String: [Int]]?
}
