#if canImport(Glibc)
import Glibc
#endif
import MsgEngine
import MsgKit
import MsgKitTesting
import Testing

/// A SQLite store whose claims hold destinations as the PostgreSQL store's do
/// (``DestinationLocks``), with what another claim would hold made up by the test:
/// the claim's side of claims that run at once, without a server.
final class LockingStore: ForwardingStore {
    /// Keys another claim holds.
    var elsewhere: Set<String> = []
    /// The most keys one claim may hold.
    var most = Int.max
    /// Records another process has in flight, told once a claim holds their recipient.
    var inFlightElsewhere: [InFlight] = []
    /// What is in flight after the first grant that read it, when it changes then.
    var inFlightLater: [InFlight]?
    private var grants = 0
    /// Every call: the keys asked for, whether it waited, whether they were recipients.
    private(set) var reservations: [(keys: [String], wait: Bool, keysAreRecipients: Bool)] = []

    func reserve(_ keys: [String], wait: Bool, keysAreRecipients: Bool, held: inout Int) -> Reservation {
        reservations.append((keys, wait, keysAreRecipients))
        var r = Reservation(granted: [], busy: [], inFlight: [])
        for key in keys {
            if wait || (!elsewhere.contains(key) && held < most) {
                r.granted.insert(key)
                held += 1
            } else if elsewhere.contains(key) {
                r.busy.insert(key)
            }
        }
        let now = grants > 0 ? inFlightLater ?? inFlightElsewhere : inFlightElsewhere
        if !r.granted.isEmpty { grants += 1 }
        r.inFlight = keysAreRecipients ? now.filter { r.granted.contains($0.to) } : now
        return r
    }

    /// The inner store's listings and due index; no journal (counts, floors, ledger) or watching.
    override var capabilities: StoreCapabilities {
        let c = inner.capabilities
        return StoreCapabilities(textListing: c.textListing, dueIndex: c.dueIndex)
    }
    override func claimSession<R>(_ body: (any ClaimSession) throws(MsgError) -> R) throws(MsgError) -> R {
        try inner.claimSession { (session) throws(MsgError) -> R in try body(LockingSession(session, self)) }
    }
}

/// The inner store's session, with the made-up locks of ``LockingStore``.
final class LockingSession: ForwardingClaimSession, DestinationLocks {
    override var locks: (any DestinationLocks)? { self }
    let store: LockingStore
    var held = 0

    init(_ inner: any ClaimSession, _ store: LockingStore) {
        self.store = store
        super.init(inner)
    }

    func reserve(_ keys: [String], wait: Bool, keysAreRecipients: Bool) throws(MsgError) -> Reservation {
        store.reserve(keys, wait: wait, keysAreRecipients: keysAreRecipients, held: &held)
    }
    /// Every record in flight, so the claim reads its destinations again only through
    /// the reservation (a store on which others claim at once cannot say "unchanged").
    override func inFlight() throws(MsgError) -> [InFlight]? { try inner.inFlight() ?? [] }
}

/// The planner on a store where claims run at once: it holds each destination
/// before it takes from it, leaves those another claim holds, stops where the
/// store can hold no more, and waits only for the destinations of its lessons.
@Suite struct DestinationLockTests {
    let loader = PluginLoader()

    /// A store with `perDestination` messages to each of `destinations`, in turn.
    func store(_ destinations: [String], perDestination: Int) throws -> LockingStore {
        let inner = try loader.openStore("sqlite:\(temporaryDirectory())/q.sqlite")
        var n = 0
        var records: [EncodedMessage] = []
        for round in 0..<perDestination {
            for to in destinations {
                n += 1
                records.append(EncodedMessage(Fixtures.message(n, to: to, createdOffset: Int64(round * 10 + n))))
            }
        }
        _ = try inner.add(records)
        return LockingStore(inner)
    }

    func flush(_ store: any Store, transport: String = "stdout:", rules: DeliveryRules = DeliveryRules(), batch: Int = 1024) throws -> Flusher.Summary {
        var options = Flusher.Options()
        options.rules = rules
        options.batchSize = batch
        options.maxWait = MsgDuration(milliseconds: 0)
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let t = transport.contains("?") ? "\(transport)&fd=\(devNull)" : "\(transport)?fd=\(devNull)"
        return try Flusher(store: store, transport: try loader.openTransport(t), policy: RetryPolicy(), options: options,
                           faults: try FaultPoints(environment: nil),
                           console: Console(input: -1, output: devNull, error: devNull, reporter: Reporter { _ in }),
                           clock: { .now() }, unit: { 0.5 }).run()
    }

    func statuses(_ store: any Store) throws -> [String: [Status]] {
        var out: [String: [Status]] = [:]
        try store.list(Query()) { (r) throws(MsgError) -> Bool in
            out[r.message.to, default: []].append(r.message.status)
            return true
        }
        return out
    }

    @Test func aDestinationAnotherClaimHoldsIsLeftWholeAndTheOthersAreSent() throws {
        let store = try store(["a", "b", "c"], perDestination: 3)
        store.elsewhere = ["b"]
        let summary = try flush(store)
        #expect(summary.sent == 6)
        let found = try statuses(store)
        #expect(found["a"] == [.sent, .sent, .sent] && found["c"] == [.sent, .sent, .sent])
        #expect(found["b"] == [.queued, .queued, .queued], "none of b taken, not even the ones behind its head")
        #expect(store.reservations.allSatisfy { !$0.wait || $0.keys.isEmpty }, "a claim with no lessons never waits")
        #expect(store.reservations.first?.keys == [], "a claim says first that it holds destinations: \(store.reservations)")
        #expect(store.reservations.dropFirst().first?.keys == ["a", "b", "c"], "held in the order the claim met them: \(store.reservations)")
    }

    @Test func aClaimStopsWhereTheStoreCanHoldNoMoreAndTheNextGoesOn() throws {
        let store = try store(["a", "b", "c", "d"], perDestination: 2)
        store.most = 1
        let summary = try flush(store)
        #expect(summary.sent == 8, "every message sent, one destination a claim")
        #expect(try statuses(store).values.allSatisfy { $0 == [.sent, .sent] })
        let granted = store.reservations.filter { !$0.keys.isEmpty }
        #expect(granted.count >= 4, "at least a claim per destination: \(store.reservations)")
    }

    @Test func destinationsByHeaderAreHeldByTheirValueAndAllInFlightIsReadAgain() throws {
        let store = try store(["a"], perDestination: 3)
        store.elsewhere = ["2"]
        var rules = DeliveryRules()
        rules.key = .header("x-seq")
        let summary = try flush(store, rules: rules)
        #expect(summary.sent == 2)
        #expect(try store.get(Fixtures.message(2, to: "a").id)?.message.status == .queued, "the message whose x-seq another claim holds")
        #expect(store.reservations.contains { $0.keys == ["1", "2", "3"] && !$0.keysAreRecipients }, "\(store.reservations)")
    }

    /// A destination found in flight elsewhere when its chunk was read is not held
    /// by the claim; a later read that no longer finds it in flight (another chunk's
    /// grant) does not make it takeable: only a hold would, and another claim may
    /// hold it by then.
    @Test func aDestinationSeenInFlightIsNotTakenUnheldWhenItsRecordEnds() throws {
        let inner = try loader.openStore("sqlite:\(temporaryDirectory())/q.sqlite")
        func tenant(_ n: Int, _ t: String, at: Int64) -> Message {
            var m = Fixtures.message(n, to: "u\(n)", createdOffset: at)
            m.headers = Headers([("x-tenant", t)])
            return m
        }
        // A first chunk of "a" (the claim reads 1,024 at a time), then "b" and "k";
        // a record of "k" sending in another process.
        var records = (0..<1100).map { EncodedMessage(tenant($0, "a", at: Int64($0))) }
        records += [EncodedMessage(tenant(2000, "b", at: 2000)), EncodedMessage(tenant(2001, "k", at: 2001))]
        var elsewhere = tenant(1500, "k", at: 1500)
        try elsewhere.transition(to: .sending, event: "attempt", at: Fixtures.t0)
        records.append(EncodedMessage(elsewhere))
        _ = try inner.add(records)
        let store = LockingStore(inner)
        // Its record ends after the first chunk's read, and another claim, not
        // committed yet, holds "k" for its next message.
        store.inFlightElsewhere = [InFlight(id: elsewhere.id, to: elsewhere.to)]
        store.inFlightLater = []
        store.elsewhere = ["k"]
        var rules = DeliveryRules()
        rules.key = .header("x-tenant")
        let summary = try flush(store, rules: rules, batch: 2000)
        #expect(summary.sent == 1101, "every a and the b")
        #expect(try store.get(Fixtures.message(2001).id)?.message.status == .queued, "k was in flight elsewhere when its chunk was read")
    }

    @Test func withEveryMessageItsOwnDestinationNothingIsHeld() throws {
        let store = try store(["a", "b"], perDestination: 2)
        store.elsewhere = ["a", "b"]
        var rules = DeliveryRules()
        rules.key = .id
        #expect(try flush(store, rules: rules).sent == 4)
        #expect(store.reservations.isEmpty, "no order to keep, nothing to hold: \(store.reservations)")
    }

    @Test func aDestinationFoundInFlightOnceHeldIsNotTaken() throws {
        let store = try store(["a", "b"], perDestination: 2)
        // Another process's claim of b committed before this one held b: only the
        // read after the reservation sees it.
        store.inFlightElsewhere = [InFlight(id: "0190a000-0000-7000-8000-00000000ffff", to: "b")]
        let summary = try flush(store)
        #expect(summary.sent == 2)
        let found = try statuses(store)
        #expect(found["a"] == [.sent, .sent] && found["b"] == [.queued, .queued])
    }

    @Test func theLessonsOfOutcomesAreHeldWaitingBeforeTheirStatesAreWritten() throws {
        let store = try store(["a", "b"], perDestination: 1)
        let summary = try flush(store, transport: "stdout:?fail_ids=\(Fixtures.message(1, to: "a").id)")
        #expect(summary.sent == 1 && summary.deferred == 1)
        let waited = store.reservations.filter { $0.wait && !$0.keys.isEmpty }
        #expect(waited.map(\.keys) == [["a"]], "the failure's destination, held waiting: \(store.reservations)")
        #expect(try store.destinationStates(["a"])["a"] != nil, "its failure counted in its state")
    }

    @Test func aSuspensionHoldsItsDestinationWaiting() throws {
        let store = try store(["a"], perDestination: 1)
        _ = try Destinations(store: store).suspend("a", until: nil, reason: "maintenance")
        #expect(store.reservations.count == 1 && store.reservations[0].keys == ["a"] && store.reservations[0].wait)
    }
}
