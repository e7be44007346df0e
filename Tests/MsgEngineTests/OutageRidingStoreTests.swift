import MsgEngine
import MsgKit
import MsgKitTesting
import Synchronization
import Testing

/// ``OutageRidingStore``: any store through an outage. It is a whole store (the
/// conformance suite, over SQLite and JSON), and a call that fails `unreachable`
/// is made again until it goes through, but a claim and a listing, which its
/// callers make again themselves or cannot.
@Suite struct OutageRidingStoreTests {
    static func outage() -> StoreOutage {
        let now = Mutex<Int64>(1_000_000)
        return StoreOutage(store: "test", stop: StopRequest(watchesSignals: false), reporter: Reporter { _ in },
                           clock: { Timestamp(milliseconds: now.withLock { $0 }) },
                           sleep: { d in now.withLock { $0 += d.milliseconds } }, seed: 3)
    }

    @Test(arguments: ["sqlite", "json"]) func passesStoreConformance(kind: String) throws {
        let dir = temporaryDirectory()
        var n = 0
        let loader = PluginLoader()
        try StoreConformance.run(freshURL: {
            n += 1
            return "\(kind):\(dir)/\(n)/queue.\(kind)"
        }, open: { url, access in OutageRidingStore(try loader.openStore(url, access: access), outage: Self.outage()) })
    }

    /// A store whose first calls of each kind fail `unreachable`, as a server that restarts.
    final class Flaky: Store {
        let inner: any Store
        var failures: Int
        var calls: [String] = []
        init(_ inner: any Store, failing n: Int) {
            self.inner = inner
            failures = n
        }
        func gate(_ what: String) throws(MsgError) {
            calls.append(what)
            if failures > 0 {
                failures -= 1
                throw MsgError(.unreachable, "\(what): the server closed the connection")
            }
        }
        var capabilities: StoreCapabilities { inner.capabilities }
        func add(_ records: [EncodedMessage]) throws(MsgError) -> [AddResult] { try gate("add"); return try inner.add(records) }
        func get(_ id: String) throws(MsgError) -> EncodedMessage? { try gate("get"); return try inner.get(id) }
        func list(_ query: Query, _ body: (EncodedMessage) throws(MsgError) -> Bool) throws(MsgError) { try gate("list"); try inner.list(query, body) }
        func count(_ query: Query) throws(MsgError) -> Int { try gate("count"); return try inner.count(query) }
        func update(_ changes: [Change]) throws(MsgError) -> [Bool] { try gate("update"); return try inner.update(changes) }
        func remove(_ removals: [Removal]) throws(MsgError) -> [Bool] { try gate("remove"); return try inner.remove(removals) }
        func claimSession<R>(_ body: (any ClaimSession) throws(MsgError) -> R) throws(MsgError) -> R {
            try gate("claim")
            return try inner.claimSession(body)
        }
        func destinationStates(_ keys: Set<String>?) throws(MsgError) -> [String: String] { try gate("states"); return try inner.destinationStates(keys) }
    }

    @Test func writesAndReadsAreMadeAgainUntilTheyGoThrough() throws {
        let flaky = Flaky(try PluginLoader().openStore("sqlite:\(temporaryDirectory())/q.sqlite"), failing: 3)
        let store = OutageRidingStore(flaky, outage: Self.outage())
        let m = Fixtures.message(1)
        #expect(try store.add([m]).map(\.inserted) == [true])
        #expect(flaky.calls == ["add", "add", "add", "add"], "three failures, then the add that went through")
        var sending = m
        try sending.transition(to: .sending, event: "attempt", at: Fixtures.t0)
        flaky.failures = 2
        #expect(try store.update([Change(sending, expected: .queued)]) == [true])
        flaky.failures = 2
        #expect(try store.update([Change(sending, expected: .queued)]) == [false], "made again by compare-and-set: never applied twice")
        flaky.failures = 1
        #expect(try store.count(Query(statuses: [.sending])) == 1)
        flaky.failures = 1
        #expect(try store.get(m.id)?.message.status == .sending)
    }

    @Test func aClaimAndAListingAreNotMadeAgainHere() throws {
        let flaky = Flaky(try PluginLoader().openStore("sqlite:\(temporaryDirectory())/q.sqlite"), failing: 0)
        let store = OutageRidingStore(flaky, outage: Self.outage())
        _ = try store.add([Fixtures.message(1)])
        flaky.failures = 1
        #expect(throws: MsgError.self) { try store.claim(Query(statuses: [.queued]), limit: 10) { $0 } }
        #expect(flaky.calls.suffix(1) == ["claim"], "one try: its caller plans it afresh")
        flaky.failures = 1
        #expect(throws: MsgError.self) { try store.list(Query()) { _ in true } }
        #expect(flaky.calls.suffix(1) == ["list"], "one try: what it gave would be given twice")
    }

    @Test func itDeclaresWhatTheStoreDeclares() throws {
        let loader = PluginLoader()
        let sqlite = OutageRidingStore(try loader.openStore("sqlite:\(temporaryDirectory())/q.sqlite"), outage: Self.outage())
        #expect(sqlite.capabilities.names == ["counting", "watching", "floors", "ledger", "text-listing", "due-index", "damaged-files"])
        let json = OutageRidingStore(try loader.openStore("json:\(temporaryDirectory())/q.json"), outage: Self.outage())
        #expect(json.capabilities.names == ["watching", "damaged-files"])
    }
}
