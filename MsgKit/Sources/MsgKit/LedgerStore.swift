/// A store that keeps a ledger (``StoreCapabilities/ledger``; msg-ledger(1), docs/DESIGN.md 10): every
/// message as it was stored and every change of it is a leaf of an append-only
/// log, written in the commit that makes the change, in the order the store
/// commits. `msg ledger` reads it through these calls and checks it against the
/// records; the leaves' bytes are ``LedgerLeaf``'s, whose format version is
/// under the ABI; the store writes them.
///
/// ## Implementation requirements
/// 1. **With the change.** A change's leaves are written in the transaction that
///    writes the change: a change committed has its leaves, one rolled back has none.
/// 2. **Append only.** Leaves are numbered from 0 in the order of the commits that
///    wrote them; no leaf is changed or removed, not when its message is removed.
/// 3. **Each message's own.** Each stored message carries the numbers of its leaves
///    in order (none for a message stored before the store kept a ledger), and each
///    removed one is kept as a list of its leaves.
/// 4. **One snapshot.** Within ``ledgerRead(_:)`` every call reads the same
///    committed state, whatever other processes commit meanwhile.
public protocol LedgerStore: AnyObject {
    /// Runs `body` with every read in it from one committed state.
    func ledgerRead<R>(_ body: () throws(MsgError) -> R) throws(MsgError) -> R
    /// How many leaves the log holds.
    func ledgerSize() throws(MsgError) -> Int
    /// The leaves from number `from` on, in runs: `body` gets the number of a run's
    /// first leaf and the run's bytes (its leaves one after another); it returns
    /// false to stop.
    func ledgerRuns(from: Int, _ body: (Int, UnsafeRawBufferPointer) throws(MsgError) -> Bool) throws(MsgError)
    /// The run that holds leaf `index`: the number of its first leaf and its bytes;
    /// nil past the end.
    func ledgerRun(holding index: Int) throws(MsgError) -> (first: Int, bytes: [UInt8])?
    /// Every stored message with the numbers of its leaves (nil: stored before the
    /// ledger), then every removed one as its id and leaves (no record), in the
    /// store's order; `body` returns false to stop.
    func ledgerMessages(_ body: (EncodedMessage?, String, [Int]?) throws(MsgError) -> Bool) throws(MsgError)
}
