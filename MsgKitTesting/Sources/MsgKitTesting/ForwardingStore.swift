import MsgKit

/// A store that passes every call to `inner`: a test's store subclasses it and
/// overrides only what it changes (a fault, a note, a lock), instead of writing
/// the contract's ten forwarding calls again.
open class ForwardingStore: Store {
    public let inner: any Store

    public init(_ inner: any Store) { self.inner = inner }

    open var capabilities: StoreCapabilities { inner.capabilities }
    open func add(_ records: [EncodedMessage]) throws(MsgError) -> [AddResult] { try inner.add(records) }
    open func get(_ id: String) throws(MsgError) -> EncodedMessage? { try inner.get(id) }
    open func list(_ query: Query, _ body: (EncodedMessage) throws(MsgError) -> Bool) throws(MsgError) { try inner.list(query, body) }
    open func count(_ query: Query) throws(MsgError) -> Int { try inner.count(query) }
    open func update(_ changes: [Change]) throws(MsgError) -> [Bool] { try inner.update(changes) }
    open func remove(_ removals: [Removal]) throws(MsgError) -> [Bool] { try inner.remove(removals) }
    open func claimSession<R>(_ body: (any ClaimSession) throws(MsgError) -> R) throws(MsgError) -> R { try inner.claimSession(body) }
    open func destinationStates(_ keys: Set<String>?) throws(MsgError) -> [String: String] { try inner.destinationStates(keys) }
    open func takeNotices() -> [String] { inner.takeNotices() }
}

/// A claim session that passes every call to `inner`, for a ``ForwardingStore``'s
/// claims to wrap.
open class ForwardingClaimSession: ClaimSession {
    public let inner: any ClaimSession

    public init(_ inner: any ClaimSession) { self.inner = inner }

    open var locks: (any DestinationLocks)? { inner.locks }
    open func inFlight() throws(MsgError) -> [InFlight]? { try inner.inFlight() }
    open func record(_ id: String) throws(MsgError) -> EncodedMessage? { try inner.record(id) }
    open func hasStates() throws(MsgError) -> Bool { try inner.hasStates() }
    open func states(_ keys: Set<String>) throws(MsgError) -> [String: String] { try inner.states(keys) }
    open func candidates(_ query: Query, after position: ClaimPosition?, skipping: Set<String>, limit: Int) throws(MsgError) -> [ClaimRow] {
        try inner.candidates(query, after: position, skipping: skipping, limit: limit)
    }
    open func store(_ changes: [Change], states: [String: String?]) throws(MsgError) -> [Bool] { try inner.store(changes, states: states) }
}
