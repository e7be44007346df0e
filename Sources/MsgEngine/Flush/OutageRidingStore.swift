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
        StoreCapabilities(counting: declared.counting == nil ? nil : self, watching: declared.watching == nil ? nil : self,
                          floors: declared.floors == nil ? nil : self, ledger: declared.ledger,
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

extension OutageRidingStore: StoreCounting, ChangeWatching, ChangeFloors, DueIndex {
    public func counts(now: Timestamp, excluding excluded: Set<String>) throws(MsgError) -> StoreCounts? {
        try outage.retrying("counting") { () throws(MsgError) in try declared.counting?.counts(now: now, excluding: excluded) }
    }

    public func created(after times: [Timestamp]) throws(MsgError) -> [String: [Int]]? {
        try outage.retrying("counting") { () throws(MsgError) in try declared.counting?.created(after: times) }
    }

    public func changeToken() throws(MsgError) -> UInt64 {
        try outage.retrying("waiting") { () throws(MsgError) in try declared.watching?.changeToken() ?? 0 }
    }

    public func changeFloor(since mark: Int64?) throws(MsgError) -> ChangeFloor {
        try outage.retrying("reading where the queue changed") { () throws(MsgError) -> ChangeFloor in
            guard let floors = declared.floors else { return ChangeFloor(mark: 0, floor: .all) }
            return try floors.changeFloor(since: mark)
        }
    }

    public func scanHint(_ kind: String) throws(MsgError) -> String? {
        try outage.retrying("reading where the last run stopped") { () throws(MsgError) in try declared.floors?.scanHint(kind) }
    }

    public func saveScanHint(_ kind: String, _ hint: String) throws(MsgError) {
        try outage.retrying("leaving where this run stopped") { () throws(MsgError) in try declared.floors?.saveScanHint(kind, hint) }
    }

    public func nextDue(_ statuses: Set<Status>, after now: Timestamp) throws(MsgError) -> Timestamp? {
        try outage.retrying("waiting") { () throws(MsgError) in try declared.dueIndex?.nextDue(statuses, after: now) }
    }
}
