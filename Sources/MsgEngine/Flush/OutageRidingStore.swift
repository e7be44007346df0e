import MsgKit

/// Any store through a store outage (``StoreOutage``, `flush --watch`): each call that
/// fails `unreachable` is made again after the outage's wait, until it goes through
/// or a stop is asked for. So a daemon rides out a PostgreSQL restart without each
/// call site saying so.
///
/// Every call is safe to make again: a write that failed committed nothing or is
/// made again by compare-and-set (an outcome is never recorded twice), a read
/// reads again, and a claim (``claimSession(_:)``) committed nothing and is made
/// again whole: its planner starts afresh at each attempt (``ClaimPlanner/begin(_:)``,
/// from the scan as it was before the claim and at the time of the attempt, so its
/// lease is as long as ever). A claim whose commit went through and whose answer
/// was lost left messages `sending` under this process's lease: the run puts them
/// back once the outage has ended (``Claimer``). One call is not made again: a
/// listing, which may have given records before it failed (given again, they would
/// be printed twice).
///
/// What the store declares it does (its ``StoreCapabilities``) this declares too,
/// read once when it is made, each through the outage but the ledger's reads (a
/// snapshot that cannot be resumed) and the damaged files (no call to the store).
public final class OutageRidingStore: Store {
    let inner: any Store
    let outage: StoreOutage
    private let declared: StoreCapabilities

    public init(_ inner: any Store, outage: StoreOutage) {
        self.inner = inner
        self.outage = outage
        declared = inner.capabilities
    }

    public var capabilities: StoreCapabilities {
        StoreCapabilities(journal: declared.journal == nil ? nil : self, watching: declared.watching == nil ? nil : self,
                          textListing: declared.textListing, dueIndex: declared.dueIndex == nil ? nil : self,
                          damagedFiles: declared.damagedFiles)
    }

    public func add(_ records: [EncodedMessage]) throws(MsgError) -> [AddResult] {
        try outage.retrying("storing messages") { () throws(MsgError) in try inner.add(records) }
    }

    public func get(_ id: String) throws(MsgError) -> EncodedMessage? {
        try outage.retrying("reading a message") { () throws(MsgError) in try inner.get(id) }
    }

    public func list(_ query: Query, _ body: (EncodedMessage) throws(MsgError) -> Bool) throws(MsgError) {
        try inner.list(query, body)
    }

    public func count(_ query: Query) throws(MsgError) -> Int {
        try outage.retrying("counting") { () throws(MsgError) in try inner.count(query) }
    }

    public func update(_ changes: [Change]) throws(MsgError) -> [Bool] {
        try outage.retrying("updating messages") { () throws(MsgError) in try inner.update(changes) }
    }

    public func remove(_ removals: [Removal]) throws(MsgError) -> [Bool] {
        try outage.retrying("removing messages") { () throws(MsgError) in try inner.remove(removals) }
    }

    public func claimSession<R>(_ body: (any ClaimSession) throws(MsgError) -> R) throws(MsgError) -> R {
        try outage.retrying("claiming") { () throws(MsgError) -> R in try inner.claimSession(body) }
    }

    public func destinationStates(_ keys: Set<String>?) throws(MsgError) -> [String: String] {
        try outage.retrying("reading destination states") { () throws(MsgError) in try inner.destinationStates(keys) }
    }

    public func takeNotices() -> [String] { inner.takeNotices() }
}

extension OutageRidingStore: ChangeWatching, DueIndex {
    public func changeToken() throws(MsgError) -> UInt64 {
        try outage.retrying("waiting") { () throws(MsgError) in try declared.watching?.changeToken() ?? 0 }
    }

    public func nextDue(_ statuses: Set<Status>, after now: Timestamp) throws(MsgError) -> Timestamp? {
        try outage.retrying("waiting") { () throws(MsgError) in try declared.dueIndex?.nextDue(statuses, after: now) }
    }
}

/// The journal's reads through the outage, but the ledger's (a snapshot that cannot
/// be resumed) and the records' read within the fold, which go straight to the
/// store. Only made when the store keeps one.
extension OutageRidingStore: JournalStore {
    /// The store's (this one declares a journal only when the store does).
    private func journal() throws(MsgError) -> any JournalStore {
        guard let j = declared.journal else { throw MsgError(.config, "this store keeps no commit journal") }
        return j
    }

    public func journalFold<R>(_ body: (CommitFold?) throws(MsgError) -> R) throws(MsgError) -> R {
        try outage.retrying("counting") { () throws(MsgError) -> R in try journal().journalFold(body) }
    }

    public func journalFloors(since mark: Int64?, limit: Int) throws(MsgError) -> (mark: Int64, floors: [CommitEffects.Floor?]?) {
        try outage.retrying("reading where the queue changed") { () throws(MsgError) in try journal().journalFloors(since: mark, limit: limit) }
    }

    public func kept(_ name: String) throws(MsgError) -> [UInt8]? {
        try outage.retrying("reading where the last run stopped") { () throws(MsgError) in try journal().kept(name) }
    }

    public func keep(_ name: String, _ value: [UInt8]) throws(MsgError) {
        try outage.retrying("leaving where this run stopped") { () throws(MsgError) in try journal().keep(name, value) }
    }

    /// Straight to the store, as ``createdCounts(after:before:)``: MsgKit reads them
    /// within ``journalFold(_:)``'s body, which goes through the outage whole (made
    /// again here, a read would be made again inside the store's broken snapshot).
    public func openCounts(now: Timestamp, excluding excluded: Set<String>) throws(MsgError) -> OpenCounts {
        try journal().openCounts(now: now, excluding: excluded)
    }

    public func createdCounts(after start: Timestamp, before end: Timestamp) throws(MsgError) -> [String: Int] {
        try journal().createdCounts(after: start, before: end)
    }

    public func ledgerRead<R>(_ body: () throws(MsgError) -> R) throws(MsgError) -> R { try journal().ledgerRead(body) }
    public func ledgerSize() throws(MsgError) -> Int { try journal().ledgerSize() }
    public func ledgerRuns(from: Int, _ body: (Int, UnsafeRawBufferPointer) throws(MsgError) -> Bool) throws(MsgError) {
        try journal().ledgerRuns(from: from, body)
    }
    public func ledgerRun(holding index: Int) throws(MsgError) -> (first: Int, bytes: [UInt8])? { try journal().ledgerRun(holding: index) }
    public func ledgerMessages(_ body: (EncodedMessage?, String, [Int]?) throws(MsgError) -> Bool) throws(MsgError) {
        try journal().ledgerMessages(body)
    }
}
