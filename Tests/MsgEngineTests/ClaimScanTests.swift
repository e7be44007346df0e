#if canImport(Glibc)
import Glibc
#endif
import MsgEngine
import MsgKit
import MsgKitTesting
import Synchronization
import Testing

/// A store that notes where each claim starts reading (``ClaimSession/candidates(_:after:skipping:limit:)``),
/// with or without saying where commits changed the queue (``JournalStore/changeFloor(since:)``), and
/// giving the messages of held destinations too.
/// Where claims started reading, in order.
final class Starts: Sendable {
    let list = Mutex<[ClaimPosition?]>([])
}

class StartNotingStore: ForwardingStore {
    let starts = Starts()

    override func claimSession<R>(_ body: (any ClaimSession) throws(MsgError) -> R) throws(MsgError) -> R {
        try inner.claimSession { (session) throws(MsgError) -> R in try body(StartNotingSession(session, starts)) }
    }
    /// The inner store's, but for its journal (where commits changed the queue).
    override var capabilities: StoreCapabilities {
        var c = inner.capabilities
        c.journal = nil
        return c
    }

    /// Where the claims since the last call started.
    func takeStarts() -> [ClaimPosition?] { starts.list.withLock { s in defer { s = [] }; return s } }
}

final class FloorNotingStore: StartNotingStore {
    /// The inner store's, its journal too.
    override var capabilities: StoreCapabilities { inner.capabilities }
}

final class StartNotingSession: ForwardingClaimSession {
    let starts: Starts
    init(_ inner: any ClaimSession, _ starts: Starts) {
        self.starts = starts
        super.init(inner)
    }
    override func candidates(_ query: Query, after position: ClaimPosition?, skipping: Set<String>, limit: Int) throws(MsgError) -> [ClaimRow] {
        starts.list.withLock { $0.append(position) }
        // Skipping is an optimisation a store may leave out: without it the claim
        // reads the messages of held destinations, and holds them itself.
        return try inner.candidates(query, after: position, skipping: [], limit: limit)
    }
}

/// `flush --watch` keeps its scan from run to run. When another process commits, a
/// store that says where (``JournalStore/changeFloor(since:)``) sends the scan back only that far, past
/// what suspended destinations hold, and every message is still found in order.
@Suite struct ClaimScanTests {
    let loader = PluginLoader()

    func flusher(_ store: any Store, _ trace: DeliveryTrace, _ clock: TestClock, leavesHint: Bool = false,
                 retryNow: Bool = false, rules: DeliveryRules = DeliveryRules(), concurrency: Int = 1, batch: Int = 1024) throws -> Flusher {
        let devNull = open("/dev/null", O_WRONLY)
        var options = Flusher.Options()
        options.rules = rules
        options.concurrency = concurrency
        options.batchSize = batch
        options.leavesScanHint = leavesHint
        if retryNow {
            options.statuses = [.failed]
            options.ignoreDue = true
            options.rules.overridesWaits = true
        }
        return Flusher(store: store, transport: TracingTransport(trace), policy: RetryPolicy(), options: options,
                       faults: try FaultPoints(environment: nil), console: Console(input: -1, output: devNull, error: devNull, reporter: Reporter { _ in }),
                       stop: StopRequest(watchesSignals: false), openTransport: { TracingTransport(trace) }, clock: clock.read, unit: { 0.5 })
    }

    func position(_ m: Message) -> ClaimPosition { ClaimPosition(createdAt: m.createdAt, id: m.id) }

    @Test func aChangeElsewhereSendsTheScanBackOnlyToWhereItChangedTheQueue() throws {
        let url = "sqlite:\(temporaryDirectory())/q.sqlite"
        let store = FloorNotingStore(try loader.openStore(url))
        let other = try loader.openStore(url)
        let clock = TestClock()
        // Fifty held by a suspension, first in FIFO order; then k0, k1 to k and x0 to x.
        let held = (0..<50).map { Fixtures.message($0, to: "h", createdOffset: Int64($0)) }
        let k = (0..<3).map { Fixtures.message(100 + $0, to: "k", createdOffset: 100 + Int64($0)) }
        let x0 = Fixtures.message(200, to: "x", createdOffset: 200)
        _ = try store.add(held + [k[0], k[1], x0])
        _ = try Destinations(store: other).suspend("h", until: nil, reason: "maintenance", now: clock.read())
        // k0 is in flight in another process.
        var sending = k[0]
        try sending.transition(to: .sending, event: "attempt", at: clock.read())
        sending.lease = Message.Lease(host: "elsewhere", pid: 4242, until: clock.read().adding(.seconds(600)))
        #expect(try other.update([Change(sending, expected: .queued)]) == [true])

        let trace = DeliveryTrace(failing: { _ in false })
        let f = try flusher(store, trace, clock)
        let first = try f.run()
        #expect(first.sent == 1 && first.heldBack == 50, "\(first)")
        #expect(trace.state.withLock { $0.handed } == [x0.id], "k waits for its message in flight elsewhere")
        #expect(store.takeStarts().first == .some(nil), "the first run read from the first message")
        #expect(try f.run() == .init(), "nothing changed")
        #expect(store.takeStarts().isEmpty, "a scan that read to the end and saw no change reads nothing")

        // Its outcome elsewhere: the scan goes back to k0, not to the fifty, and k1 goes.
        var sent = sending
        sent.lease = nil
        try sent.transition(to: .sent, event: "sent", at: clock.read())
        #expect(try other.update([Change(sent, expected: .sending)]) == [true])
        #expect(try f.run().sent == 1)
        #expect(trace.state.withLock { $0.handed } == [x0.id, k[1].id])
        let starts = store.takeStarts()
        #expect(starts.first == .some(ClaimPosition(createdAt: k[0].createdAt, id: "")), "\(starts)")

        // Added elsewhere at the end: read from the lowest of what changed since the
        // scan last looked, this process's own outcome for k1 included (own commits count).
        _ = try other.add([k[2]])
        #expect(try f.run().sent == 1)
        #expect(store.takeStarts().first == .some(ClaimPosition(createdAt: k[1].createdAt, id: "")))

        // Added elsewhere before everything (its created_at given): found, before the fifty.
        let early = Fixtures.message(300, to: "y", createdOffset: -5)
        _ = try other.add([early])
        #expect(try f.run().sent == 1)
        #expect(store.takeStarts().first == .some(ClaimPosition(createdAt: early.createdAt, id: "")))

        // Resumed elsewhere: a state changed, the scan starts from the first message, the fifty go in order.
        _ = try Destinations(store: other).resume("h", now: clock.read())
        #expect(try f.run().sent == 50)
        #expect(store.takeStarts().first == .some(nil))
        #expect(trace.state.withLock { $0.handed } == [x0.id, k[1].id, k[2].id, early.id] + held.map(\.id))
    }

    @Test func withoutFloorsAChangeElsewhereStartsTheScanFromTheFirstMessage() throws {
        let url = "sqlite:\(temporaryDirectory())/q.sqlite"
        let store = StartNotingStore(try loader.openStore(url))
        let other = try loader.openStore(url)
        let clock = TestClock()
        let held = (0..<5).map { Fixtures.message($0, to: "h", createdOffset: Int64($0)) }
        _ = try store.add(held)
        _ = try Destinations(store: other).suspend("h", until: nil, reason: "maintenance", now: clock.read())
        let trace = DeliveryTrace(failing: { _ in false })
        let f = try flusher(store, trace, clock)
        #expect(try f.run().heldBack == 5)
        _ = store.takeStarts()
        let late = Fixtures.message(9, to: "x", createdOffset: 50)
        _ = try other.add([late])
        #expect(try f.run().sent == 1)
        #expect(store.takeStarts().first == .some(nil))
    }

    /// The run's own outcome ends a hold (here a probe's, which held the rest of its
    /// destination): the scan goes back to that destination's first message left
    /// behind, not to the first message, so the fifty a suspension holds before it
    /// are read once a run, and the rest of it still goes in order.
    @Test func anOwnOutcomeSendsTheScanBackOnlyToWhatItsDestinationLeft() throws {
        let url = "sqlite:\(temporaryDirectory())/q.sqlite"
        let store = StartNotingStore(try loader.openStore(url))
        let clock = TestClock()
        let held = (0..<50).map { Fixtures.message($0, to: "h", createdOffset: Int64($0)) }
        let k = (0..<4).map { Fixtures.message(100 + $0, to: "k", createdOffset: 100 + Int64($0)) }
        _ = try store.add(held + k)
        _ = try Destinations(store: store).suspend("h", until: nil, reason: "maintenance", now: clock.read())
        var rules = DeliveryRules()
        rules.breakerThreshold = 1
        rules.coolDown = .seconds(30)
        // k fails once: its breaker opens and the rest of it goes back untouched.
        let down = Mutex(true)
        let trace = DeliveryTrace(failing: { m in m.to == "k" && down.withLock { $0 } })
        #expect(try flusher(store, trace, clock, rules: rules).run().deferred == 1)
        down.withLock { $0 = false }
        clock.advance(31_000)
        _ = store.takeStarts()
        // After the cool-down: k1 probes (k0 waits to be retried), holding k2 and k3
        // until its outcome.
        let probe = try flusher(store, trace, clock, rules: rules).run()
        #expect(probe.sent == 3 && probe.heldBack == 50, "\(probe)")
        #expect(Array(trace.state.withLock { $0.handed }.suffix(3)) == k[1...].map(\.id), "k1 probes, then k2 and k3 in order")
        let starts = store.takeStarts()
        #expect(starts.count >= 2 && starts.first == .some(nil), "\(starts)")
        #expect(starts.dropFirst().first == .some(ClaimPosition(createdAt: k[1].createdAt, id: "")),
                "after the probe's outcome, from k1's millisecond: \(starts)")
        #expect(starts.dropFirst().allSatisfy { $0.map { $0.createdAt > held[49].createdAt } ?? false }, "\(starts)")
    }

    /// Keyed by a header, a run counts what waits from its scan: a probe that fails
    /// releases its destination, the scan reads its messages again and holds them
    /// behind the reopened breaker, and counts them once more, not zero times.
    @Test func aDestinationHeldAgainAfterItsProbeCountsWhatWaits() throws {
        let url = "sqlite:\(temporaryDirectory())/q.sqlite"
        let store = try loader.openStore(url)
        let clock = TestClock()
        let k = (0..<4).map { n in
            var m = Fixtures.message(100 + n, to: "k\(n)@x", createdOffset: 100 + Int64(n))
            m.headers["dest"] = "k"
            return m
        }
        _ = try store.add(k)
        var rules = DeliveryRules()
        rules.key = .header("dest")
        rules.breakerThreshold = 1
        rules.coolDown = .seconds(30)
        let trace = DeliveryTrace(failing: { _ in true })
        let opened = try flusher(store, trace, clock, rules: rules).run()
        #expect(opened.deferred == 1, "\(opened)")
        clock.advance(31_000)
        // k1 probes and fails: k2 and k3 wait behind the breaker, open again.
        let probed = try flusher(store, trace, clock, rules: rules).run()
        #expect(probed.deferred == 1 && probed.heldBack == 2, "\(probed)")
        #expect(probed.holds.first?.hasSuffix("2 messages wait without an attempt counted") == true, "\(probed.holds)")
    }

    /// With two workers and batches of two, a destination has its share pending (two)
    /// after the first claim: the next holds the rest of it, and each outcome frees
    /// it. Every claim after the first starts at that destination's messages, never
    /// again before the fifty a suspension holds, and its twenty go in FIFO order.
    @Test func ownOutcomesFreeingAShareGoBackToItNotToTheFirstMessage() throws {
        let url = "sqlite:\(temporaryDirectory())/q.sqlite"
        let store = StartNotingStore(try loader.openStore(url))
        let clock = TestClock()
        let held = (0..<50).map { Fixtures.message($0, to: "h", createdOffset: Int64($0)) }
        let k = (0..<20).map { Fixtures.message(100 + $0, to: "k", createdOffset: 100 + Int64($0)) }
        _ = try store.add(held + k)
        _ = try Destinations(store: store).suspend("h", until: nil, reason: "maintenance", now: clock.read())
        let trace = DeliveryTrace(failing: { _ in false })
        let summary = try flusher(store, trace, clock, concurrency: 2, batch: 2).run()
        #expect(summary.sent == 20 && summary.heldBack == 50, "\(summary)")
        #expect(trace.state.withLock { $0.firstAttempts["k"] } == k.map(\.id), "k in FIFO order")
        #expect(trace.state.withLock { $0.maxInFlightPerKey } == 1)
        // Each chunk a claim reads is a start (this store gives held messages too).
        let starts = store.takeStarts()
        #expect(starts.first == .some(nil) && starts.dropFirst().allSatisfy { $0 != nil }, "only the first claim reads from the first message")
        let inTheFifty = starts.compactMap { $0 }.filter { $0.createdAt <= held[49].createdAt }
        #expect(inTheFifty.count == Set(inTheFifty).count, "the fifty read once: \(inTheFifty.count) starts among them")
    }

    /// One-shot runs, each a new process (a new store handle and flusher), as cron
    /// runs `msg flush`: each starts where the last one stopped, past what a
    /// suspension holds, until a hold ends, a state changes or another process
    /// writes before where it stopped.
    @Test func aOneShotRunStartsWhereTheLastOneStopped() throws {
        let url = "sqlite:\(temporaryDirectory())/q.sqlite"
        let clock = TestClock()
        let trace = DeliveryTrace(failing: { _ in false })
        let held = (0..<50).map { Fixtures.message($0, to: "h", createdOffset: Int64($0)) }
        let x = (0..<4).map { Fixtures.message(100 + $0, to: "x", createdOffset: 100 + Int64($0)) }
        let other = try loader.openStore(url)
        _ = try other.add(held + [x[0]])
        _ = try Destinations(store: other).suspend("h", until: clock.read().adding(.seconds(60)), reason: "maintenance", now: clock.read())
        func run() throws -> (Flusher.Summary, [ClaimPosition?]) {
            let store = FloorNotingStore(try loader.openStore(url))
            let summary = try flusher(store, trace, clock, leavesHint: true).run()
            return (summary, store.takeStarts())
        }
        // Past the fifty: from where the commits since the last run's look wrote
        // (that run's own outcomes included), never from the first message.
        func pastTheFifty(_ starts: [ClaimPosition?]) -> Bool {
            guard let first = starts.first, let p = first else { return false }
            return p.createdAt > held[49].createdAt
        }
        var (summary, starts) = try run()
        #expect(summary.sent == 1 && starts.first == .some(nil), "the first run reads from the first message: \(starts)")
        (summary, starts) = try run()
        #expect(summary.sent == 0 && summary.heldBack == 50 && pastTheFifty(starts), "\(starts)")
        _ = try other.add([x[1]])
        (summary, starts) = try run()
        #expect(summary.sent == 1 && pastTheFifty(starts), "\(starts)")
        // Written before where the last run stopped (its created_at given): read from there.
        let early = Fixtures.message(200, to: "y", createdOffset: 60)
        _ = try other.add([early])
        (summary, starts) = try run()
        #expect(summary.sent == 1 && starts.first == .some(ClaimPosition(createdAt: early.createdAt, id: "")), "\(starts)")
        (summary, starts) = try run()
        #expect(summary.sent == 0 && pastTheFifty(starts), "\(starts)")
        // Another state changed (a pause of x): anything may have changed, from the first.
        _ = try Destinations(store: other).suspend("x", until: nil, reason: "a moment", now: clock.read())
        _ = try Destinations(store: other).resume("x", now: clock.read())
        _ = try other.add([x[2]])
        (summary, starts) = try run()
        #expect(summary.sent == 1 && starts.first == .some(nil), "\(starts)")
        // The suspension ends by its time: from the first message, and the fifty go.
        clock.advance(60_000)
        _ = try other.add([x[3]])
        (summary, starts) = try run()
        #expect(summary.sent == 51 && starts.first == .some(nil), "\(summary) \(starts)")
        #expect(trace.state.withLock { $0.handed } == [x[0].id, x[1].id, early.id, x[2].id] + held.map(\.id) + [x[3].id])
    }

    /// A run's own outcomes behind its scan are the next run's to see: `retry --now`
    /// leaves a failed message behind it, and the next `retry --now` tries it again.
    @Test func whatARunLeavesBehindItsScanIsFoundByTheNext() throws {
        let url = "sqlite:\(temporaryDirectory())/q.sqlite"
        let clock = TestClock()
        let trace = DeliveryTrace(failing: { _ in true })
        let m = Fixtures.message(1, to: "x")
        _ = try loader.openStore(url).add([m])
        _ = try flusher(try loader.openStore(url), trace, clock, leavesHint: true).run()
        for attempts in 2...3 {
            let store = try loader.openStore(url)
            _ = try flusher(store, trace, clock, leavesHint: true, retryNow: true).run()
            #expect(try store.get(m.id)?.message.attempts == attempts)
        }
    }
}
