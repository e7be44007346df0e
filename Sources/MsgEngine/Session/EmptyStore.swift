import MsgKit

/// The queue before anything was queued on the default store (``Session``): every
/// look finds nothing, so `queue ls`, `count`, `stats`, `metrics` and
/// `destinations` print an empty result and exit 0, as Postfix's mailq says the
/// queue is empty. Only commands that look open it, and it changes nothing: a
/// write is refused (the commands that write open the real store, which makes it).
final class EmptyStore: Store {
    private static func refused() -> MsgError { MsgError(.storeIO, "the default store does not exist yet; nothing was written") }
    func add(_ records: [EncodedMessage]) throws(MsgError) -> [AddResult] { throw Self.refused() }
    func get(_ id: String) throws(MsgError) -> EncodedMessage? { nil }
    func list(_ query: Query, _ body: (EncodedMessage) throws(MsgError) -> Bool) throws(MsgError) {}
    var capabilities: StoreCapabilities { StoreCapabilities() }
    func count(_ query: Query) throws(MsgError) -> Int { 0 }
    func update(_ changes: [Change]) throws(MsgError) -> [Bool] { throw Self.refused() }
    func remove(_ removals: [Removal]) throws(MsgError) -> [Bool] { throw Self.refused() }
    func claimSession<R>(_ body: (any ClaimSession) throws(MsgError) -> R) throws(MsgError) -> R { throw Self.refused() }
    func destinationStates(_ keys: Set<String>?) throws(MsgError) -> [String: String] { [:] }
}
