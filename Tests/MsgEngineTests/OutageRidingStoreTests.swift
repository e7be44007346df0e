#if canImport(Glibc)
import Glibc
#endif
import MsgEngine
import MsgKit
import MsgKitTesting
import Synchronization
import Testing

/// ``OutageRidingStore``: any store through an outage. It is a whole store (the
/// conformance suite, over SQLite and JSON), and a call that fails `unreachable`
/// is made again until it goes through, a claim whole, but a listing, which could
/// give records twice.
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
            // A store's directory is there before it: msg makes none (StoreFile).
            mkdir("\(dir)/\(n)", 0o700)
            return "\(kind):\(dir)/\(n)/queue.\(kind)"
        }, open: { url, access in OutageRidingStore(try loader.openStore(url, access: access), outage: Self.outage()) })
    }

    /// A store whose first calls of each kind fail `unreachable`, as a server that restarts.
    final class Flaky: ForwardingStore {
        var failures: Int
        var calls: [String] = []
        init(_ inner: any Store, failing n: Int) {
            failures = n
            super.init(inner)
        }
        func gate(_ what: String) throws(MsgError) {
            calls.append(what)
            if failures > 0 {
                failures -= 1
                throw MsgError(.unreachable, "\(what): the server closed the connection")
            }
        }
        override func add(_ records: [EncodedMessage]) throws(MsgError) -> [AddResult] { try gate("add"); return try super.add(records) }
        override func get(_ id: String) throws(MsgError) -> EncodedMessage? { try gate("get"); return try super.get(id) }
        override func list(_ query: Query, _ body: (EncodedMessage) throws(MsgError) -> Bool) throws(MsgError) { try gate("list"); try super.list(query, body) }
        override func count(_ query: Query) throws(MsgError) -> Int { try gate("count"); return try super.count(query) }
        override func update(_ changes: [Change]) throws(MsgError) -> [Bool] { try gate("update"); return try super.update(changes) }
        override func remove(_ removals: [Removal]) throws(MsgError) -> [Bool] { try gate("remove"); return try super.remove(removals) }
        override func claimSession<R>(_ body: (any ClaimSession) throws(MsgError) -> R) throws(MsgError) -> R {
            try gate("claim")
            return try super.claimSession(body)
        }
        override func destinationStates(_ keys: Set<String>?) throws(MsgError) -> [String: String] { try gate("states"); return try super.destinationStates(keys) }
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

    @Test func aClaimIsMadeAgainWholeAndAListingIsNot() throws {
        let flaky = Flaky(try PluginLoader().openStore("sqlite:\(temporaryDirectory())/q.sqlite"), failing: 0)
        let store = OutageRidingStore(flaky, outage: Self.outage())
        let m = Fixtures.message(1)
        _ = try store.add([m])
        flaky.failures = 1
        let taken = try store.claim(Query(statuses: [.queued]), limit: 10) { (x) throws(MsgError) -> Message? in
            var y = x
            try y.transition(to: .sending, event: "attempt", at: Fixtures.t0)
            return y
        }
        #expect(taken.map(\.message.id) == [m.id])
        #expect(flaky.calls.suffix(2) == ["claim", "claim"], "the claim that failed, then the one that went through")
        flaky.failures = 1
        #expect(throws: MsgError.self) { try store.list(Query()) { _ in true } }
        #expect(flaky.calls.suffix(1) == ["list"], "one try: what it gave would be given twice")
    }

    /// A store whose claims lose their connection at the commit while `failing` is
    /// above 0, after the planner has read and decided; `meanwhile` runs then (what
    /// another process does during the outage).
    final class LosingCommits: ForwardingStore {
        var failing = 0
        var meanwhile: () throws -> Void = {}
        override func claimSession<R>(_ body: (any ClaimSession) throws(MsgError) -> R) throws(MsgError) -> R {
            do throws(MsgError) {
                return try inner.claimSession { (session) throws(MsgError) -> R in try body(Session(session, self)) }
            } catch {
                if error.code == .unreachable { try? meanwhile() }
                throw error
            }
        }

        final class Session: ForwardingClaimSession {
            let owner: LosingCommits
            init(_ inner: any ClaimSession, _ owner: LosingCommits) {
                self.owner = owner
                super.init(inner)
            }
            override func store(_ changes: [Change], states: [String: String?]) throws(MsgError) -> [Bool] {
                if owner.failing > 0 {
                    owner.failing -= 1
                    throw MsgError(.unreachable, "the server closed the connection")
                }
                return try inner.store(changes, states: states)
            }
        }
    }

    /// `flush --watch` through an outage that strikes at a claim's commit: the store
    /// makes the claim again, from the scan as it was before, so what the attempt that
    /// failed held (a destination busy in another process, whose message had its
    /// outcome during the outage) holds nothing, and every message goes once.
    @Test func aClaimMadeAgainAfterAnOutageKeepsNothingOfTheAttemptThatFailed() throws {
        let url = "sqlite:\(temporaryDirectory())/q.sqlite"
        let loader = PluginLoader()
        let lossy = LosingCommits(try loader.openStore(url))
        let other = try loader.openStore(url)
        let clock = TestClock()
        let a = (0..<2).map { Fixtures.message($0, to: "a", createdOffset: Int64($0)) }
        let b = Fixtures.message(10, to: "b", createdOffset: 10)
        _ = try lossy.add(a + [b])
        // a0 is in flight in another process.
        var sending = a[0]
        try sending.transition(to: .sending, event: "attempt", at: clock.read())
        sending.lease = Message.Lease(host: "elsewhere", pid: 4242, until: clock.read().adding(.seconds(600)))
        #expect(try other.update([Change(sending, expected: .queued)]) == [true])
        // The first claim loses its commit; meanwhile a0 is sent there.
        lossy.failing = 1
        lossy.meanwhile = {
            var sent = sending
            sent.lease = nil
            try sent.transition(to: .sent, event: "sent", at: clock.read())
            _ = try other.update([Change(sent, expected: .sending)])
        }
        let trace = DeliveryTrace(failing: { _ in false })
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let said = Mutex<[String]>([])
        let reporter = Reporter { line in said.withLock { $0.append(line) } }
        let f = Flusher(store: lossy, transport: TracingTransport(trace), policy: RetryPolicy(), options: Flusher.Options(),
                        faults: try FaultPoints(environment: nil), console: Console(input: -1, output: devNull, error: devNull, reporter: reporter),
                        stop: StopRequest(watchesSignals: false), clock: clock.read, unit: { 0.5 })
        f.outage = StoreOutage(store: "test", stop: StopRequest(watchesSignals: false), reporter: reporter, clock: clock.read,
                               sleep: { clock.advance($0.milliseconds) }, seed: 1)
        let summary = try f.run()
        #expect(lossy.failing == 0, "the claim failed once")
        #expect(summary.sent == 2 && summary.heldBack == 0, "\(summary)")
        #expect(trace.state.withLock { $0.handed } == [a[1].id, b.id], "a1 goes: a is no longer busy elsewhere")
        #expect(said.withLock { $0 }.contains { $0.contains("claiming waits for the store") })
        #expect(try other.count(Query(statuses: [.sending])) == 0)
    }

    /// A store whose journal's read of the records fails `unreachable` once, inside
    /// the fold's snapshot: a server that restarts while the counts are read.
    final class FlakyJournal: ForwardingStore, JournalStore {
        let journal: any JournalStore
        var failures = 1
        var folds = 0
        init(_ inner: any Store, journal: any JournalStore) {
            self.journal = journal
            super.init(inner)
        }
        override var capabilities: StoreCapabilities {
            var c = inner.capabilities
            c.journal = self
            return c
        }
        func journalFold<R>(_ body: (CommitFold?) throws(MsgError) -> R) throws(MsgError) -> R {
            folds += 1
            return try journal.journalFold(body)
        }
        func openCounts(now: Timestamp, excluding excluded: Set<String>) throws(MsgError) -> OpenCounts {
            if failures > 0 {
                failures -= 1
                throw MsgError(.unreachable, "the server closed the connection")
            }
            return try journal.openCounts(now: now, excluding: excluded)
        }
        func createdCounts(after start: Timestamp, before end: Timestamp) throws(MsgError) -> [String: Int] {
            try journal.createdCounts(after: start, before: end)
        }
        func journalFloors(since mark: Int64?, limit: Int) throws(MsgError) -> (mark: Int64, floors: [CommitEffects.Floor?]?) {
            try journal.journalFloors(since: mark, limit: limit)
        }
        func kept(_ name: String) throws(MsgError) -> [UInt8]? { try journal.kept(name) }
        func keep(_ name: String, _ value: [UInt8]) throws(MsgError) { try journal.keep(name, value) }
        func ledgerRead<R>(_ body: () throws(MsgError) -> R) throws(MsgError) -> R { try journal.ledgerRead(body) }
        func ledgerSize() throws(MsgError) -> Int { try journal.ledgerSize() }
        func ledgerRuns(from: Int, _ body: (Int, UnsafeRawBufferPointer) throws(MsgError) -> Bool) throws(MsgError) {
            try journal.ledgerRuns(from: from, body)
        }
        func ledgerMessages(_ body: (EncodedMessage?, String, [Int]?) throws(MsgError) -> Bool) throws(MsgError) {
            try journal.ledgerMessages(body)
        }
    }

    @Test func countsCutShortAreReadAgainWholeFromTheFold() throws {
        let sqlite = try PluginLoader().openStore("sqlite:\(temporaryDirectory())/q.sqlite")
        let m = Fixtures.message(1)
        _ = try sqlite.add([m])
        let flaky = FlakyJournal(sqlite, journal: try #require(sqlite.capabilities.journal))
        let store = OutageRidingStore(flaky, outage: Self.outage())
        let counts = try #require(try store.capabilities.journal?.counts(now: Fixtures.t0, excluding: []))
        #expect(counts.oldestDue == m.createdAt)
        #expect(counts.tally.records(statuses: [.queued], to: m.to) == 1)
        #expect(flaky.folds == 2, "the fold and the records' read made again together, not the read alone inside the failed snapshot")
    }

    @Test func itDeclaresWhatTheStoreDeclares() throws {
        let loader = PluginLoader()
        let sqlite = OutageRidingStore(try loader.openStore("sqlite:\(temporaryDirectory())/q.sqlite"), outage: Self.outage())
        #expect(sqlite.capabilities.names == ["journal", "watching", "text-listing", "due-index", "damaged-files"])
        let json = OutageRidingStore(try loader.openStore("json:\(temporaryDirectory())/q.json"), outage: Self.outage())
        #expect(json.capabilities.names == ["journal", "watching", "damaged-files"])
    }
}
