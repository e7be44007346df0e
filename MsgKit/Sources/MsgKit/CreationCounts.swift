/// A store that counts its records by when they were created, beside its ``Tally``
/// (ABI 7.1), so `msg queue stats` reads no record: the ages there are the time
/// since `created_at`, in buckets whose edges move with the clock.
///
/// ## Implementation requirements
/// 1. **Strictly after.** For each time in `times`, the records of each status whose
///    `created_at` is later than it (not equal), as the records say; then all the
///    records of that status. A status with none may be left out.
/// 2. **One state.** Every figure of one answer is read from the same committed
///    state of the store, kept with every change in its commit, as the ``Tally`` is.
/// 3. **Nil** when the store cannot tell without reading the records (then the host
///    reads them), never a guess.
public protocol CreationCounts: Store {
    /// Per status: the records created after each of `times` (in their order), then
    /// all of them (`times.count + 1` figures).
    /// - Throws: `storeIO`, `corrupt`.
    func created(after times: [Timestamp]) throws(MsgError) -> [String: [Int]]?
}
