#if canImport(Glibc)
import Glibc
#endif
import MsgEngine
import MsgKit
import MsgKitTesting
import Synchronization
import Testing

/// What every delivery worker's transport saw: for fault injection and tracing
/// only. Each worker has its own ``TracingTransport``; they share this.
final class DeliveryTrace: Sendable {
    struct State {
        var inFlight: [String: Int] = [:]
        var maxInFlightPerKey = 0
        var inFlightTotal = 0
        var maxInFlightTotal = 0
        var firstAttempts: [String: [String]] = [:]
        var attempted: Set<String> = []
        var handed: [String] = []
    }
    let state = Mutex(State())
    /// Ids whose destination (by `to`) fails, and a clock to move while delivering.
    let failing: @Sendable (Message) -> Bool
    let during: @Sendable (Message) -> Void
    let latencyMicroseconds: UInt32
    /// An outcome other than delivered or failed `remote`, for some messages.
    let answer: @Sendable (Message) -> DeliveryOutcome?

    init(latencyMicroseconds: UInt32 = 0, failing: @escaping @Sendable (Message) -> Bool = { _ in false },
         during: @escaping @Sendable (Message) -> Void = { _ in },
         answer: @escaping @Sendable (Message) -> DeliveryOutcome? = { _ in nil }) {
        self.latencyMicroseconds = latencyMicroseconds
        self.answer = answer
        self.failing = failing
        self.during = during
    }
}

/// A count the sleeping closure bumps.
final class Counter: Sendable {
    private let n = Mutex(0)
    func add() { n.withLock { $0 += 1 } }
    var value: Int { n.withLock { $0 } }
}

final class TracingTransport: Transport {
    let trace: DeliveryTrace
    init(_ trace: DeliveryTrace) { self.trace = trace }

    func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> [DeliveryOutcome] {
        records.map { r in
            let m = r.message
            trace.state.withLock { s in
                s.inFlight[m.to, default: 0] += 1
                s.maxInFlightPerKey = max(s.maxInFlightPerKey, s.inFlight[m.to]!)
                s.inFlightTotal += 1
                s.maxInFlightTotal = max(s.maxInFlightTotal, s.inFlightTotal)
                if s.attempted.insert(m.id).inserted { s.firstAttempts[m.to, default: []].append(m.id) }
                s.handed.append(m.id)
            }
            if trace.latencyMicroseconds > 0 { usleep(trace.latencyMicroseconds) }
            trace.during(m)
            let failed = trace.failing(m)
            trace.state.withLock { s in
                s.inFlight[m.to]! -= 1
                s.inFlightTotal -= 1
            }
            if let answer = trace.answer(m) { return answer }
            return failed ? .failed(MsgError(.remote, "down"), retryAfter: nil) : .delivered(confirmed: false)
        }
    }
}

@Suite struct DestinationDeliveryTests {
    let loader = PluginLoader()

    func flusher(_ store: any Store, _ trace: DeliveryTrace, clock: TestClock, concurrency: Int = 1,
                 rules: DeliveryRules = DeliveryRules(), sleeps: Counter? = nil, batch: Int = 1024) throws -> Flusher {
        var options = Flusher.Options()
        options.batchSize = batch
        options.concurrency = concurrency
        options.rules = rules
        let devNull = open("/dev/null", O_WRONLY)
        return Flusher(store: store, transport: TracingTransport(trace), policy: RetryPolicy(), options: options,
                       faults: try FaultPoints(environment: nil), console: Console(input: -1, output: devNull, error: devNull, reporter: Reporter { _ in }),
                       stop: StopRequest(watchesSignals: false), openTransport: { TracingTransport(trace) },
                       clock: clock.read, sleep: { d in
                           // The injected clock moves instead of time passing.
                           sleeps?.add()
                           clock.advance(d.milliseconds)
                       }, unit: { 0.5 })
    }

    /// `keys` destinations of `each` messages, interleaved in FIFO order.
    func fill(_ store: any Store, keys: Int, each: Int) throws -> [String: [String]] {
        var messages: [Message] = []
        var order: [String: [String]] = [:]
        for i in 0..<(keys * each) {
            let m = Fixtures.message(i, to: "dest\(i % keys)", createdOffset: Int64(i))
            messages.append(m)
            order[m.to, default: []].append(m.id)
        }
        _ = try store.add(messages)
        return order
    }

    @Test func eachDestinationGoesInFIFOOrderOneAtATimeWhileDestinationsGoInParallel() throws {
        let store = try loader.openStore("sqlite:\(temporaryDirectory())/q.sqlite")
        let order = try fill(store, keys: 8, each: 200)
        // Random failures per destination, fixed by the id: a failure does not block
        // the messages behind it.
        let trace = DeliveryTrace(latencyMicroseconds: 300, failing: { m in m.id.utf8.reduce(0) { $0 &+ Int($1) } % 7 == 0 })
        var rules = DeliveryRules()
        rules.breakerThreshold = 0
        // Small batches: claims keep adding to destinations already in flight.
        let summary = try flusher(store, trace, clock: TestClock(), concurrency: 8, rules: rules, batch: 32).run()
        #expect(summary.sent + summary.deferred == 1600 && summary.deferred > 0, "\(summary)")
        let s = trace.state.withLock { $0 }
        #expect(s.maxInFlightPerKey == 1, "a destination never has two messages in flight")
        #expect(s.maxInFlightTotal > 1, "destinations went in parallel")
        for (key, ids) in order {
            let inOrder = s.firstAttempts[key] == ids
            #expect(inOrder, "\(key): first attempts in FIFO order")
        }
    }

    @Test func aThrottleOf20PerSecondSpaces200MessagesOverTenSecondsOfTheInjectedClock() throws {
        let store = try loader.openStore("sqlite:\(temporaryDirectory())/q.sqlite")
        _ = try fill(store, keys: 1, each: 200)
        _ = try store.add((0..<20).map { Fixtures.message(1000 + $0, to: "other", createdOffset: 5) })
        let clock = TestClock()
        var rules = DeliveryRules()
        rules.rate = try Rate(parsing: "20/s")
        let sleeps = Counter()
        let summary = try flusher(store, DeliveryTrace(), clock: clock, concurrency: 2, rules: rules, sleeps: sleeps).run()
        #expect(summary.sent == 220, "\(summary)")
        let elapsed = clock.read().milliseconds - Fixtures.t0.milliseconds
        #expect(elapsed >= 9500 && elapsed < 10_500, "200 at 20/s: \(elapsed) ms of the injected clock")
        var attempts: [Int64] = []
        try store.list(Query(to: "dest0")) { r in
            attempts.append(r.message.history.first { $0.event == "attempt" }!.at.milliseconds)
            return true
        }
        let gaps = zip(attempts.dropFirst(), attempts).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 >= 50 }, "no two attempts of one destination closer than 1/20 s: \(gaps.min() ?? 0)")
        #expect(sleeps.value > 0)
    }

    @Test func twoFlushersShareOneBucketThroughTheStore() throws {
        let dir = temporaryDirectory()
        let store = try loader.openStore("sqlite:\(dir)/q.sqlite")
        _ = try fill(store, keys: 1, each: 40)
        let clock = TestClock()
        var rules = DeliveryRules()
        rules.rate = try Rate(parsing: "10/s")
        var options = Flusher.Options()
        options.rules = rules
        options.limit = 20
        let devNull = open("/dev/null", O_WRONLY)
        // Two flushers, each with its own connection, one after the other on one clock:
        // the second finds the bucket the first emptied.
        for _ in 0..<2 {
            let own = try loader.openStore("sqlite:\(dir)/q.sqlite")
            let f = Flusher(store: own, transport: TracingTransport(DeliveryTrace()), policy: RetryPolicy(), options: options,
                            faults: try FaultPoints(environment: nil), console: Console(input: -1, output: devNull, error: devNull, reporter: Reporter { _ in }),
                            stop: StopRequest(watchesSignals: false), clock: clock.read, sleep: { clock.advance($0.milliseconds) })
            #expect(try f.run().sent == 20)
        }
        let elapsed = clock.read().milliseconds - Fixtures.t0.milliseconds
        #expect(elapsed >= 3900, "40 at 10/s across two flushers: \(elapsed) ms")
    }

    @Test func theBreakerOpensDefersWithoutAttemptsProbesOnceAndClosesAndItsStateSurvivesARestart() throws {
        let dir = temporaryDirectory()
        let path = "sqlite:\(dir)/q.sqlite"
        let store = try loader.openStore(path)
        // The destination that is down comes first in FIFO order; another one is fine.
        let down = (0..<10).map { Fixtures.message($0, to: "down", createdOffset: Int64($0)) }
        let up = (0..<5).map { Fixtures.message(100 + $0, to: "up", createdOffset: 20 + Int64($0)) }
        _ = try store.add(down + up)
        let isDown = Mutex(true)
        let trace = DeliveryTrace(failing: { m in m.to == "down" && isDown.withLock { $0 } })
        let clock = TestClock()
        var rules = DeliveryRules()
        rules.breakerThreshold = 5
        rules.coolDown = .seconds(30)
        let first = try flusher(store, trace, clock: clock, rules: rules).run()
        let opened: String = first.notices.first ?? ""
        #expect(first.notices.count == 1 && opened.hasPrefix("destination down: circuit open for 30s after 5 failures"), "\(first.notices)")
        var handed = trace.state.withLock { $0.handed }
        #expect(handed.filter { id in down.contains { $0.id == id } } == down.prefix(5).map(\.id), "five attempts, then no more")
        #expect(Set(up.map(\.id)).isSubset(of: Set(handed)), "the other destination is unaffected")
        #expect(first.heldBack == 5 && first.exitCode == 75, "\(first)")
        #expect(try store.count(Query(statuses: [.queued], to: "down")) == 5)
        var waiting: [Message] = []
        try store.list(Query(statuses: [.queued], to: "down")) { waiting.append($0.message); return true }
        #expect(waiting.allSatisfy { $0.attempts == 0 }, "deferred without an attempt counted")

        // A restart: a new store connection and flusher, 10 s later. Still open.
        clock.advance(10_000)
        let restarted = try loader.openStore(path)
        _ = try flusher(restarted, trace, clock: clock, rules: rules).run()
        #expect(trace.state.withLock { $0.handed.count } == handed.count, "the open breaker was read from the store")
        #expect(try Destinations(store: restarted).why(waiting[0], now: clock.read())?.hasPrefix("breaker: down is open until") == true)

        // After the cool-down, still down: one probe, and open again for twice as long.
        clock.advance(21_000)
        let probe = try flusher(restarted, trace, clock: clock, rules: rules).run()
        handed = trace.state.withLock { $0.handed }
        #expect(handed.last == down[5].id && handed.filter { $0 == down[5].id }.count == 1, "one probe")
        let reopened: String = probe.notices.first ?? ""
        #expect(reopened.hasPrefix("destination down: circuit open for 1m"), "\(probe.notices)")

        // Back up: after the longer cool-down one probe goes, closes the breaker, and the rest follow in order.
        isDown.withLock { $0 = false }
        clock.advance(61_000)
        let closed = try flusher(restarted, trace, clock: clock, rules: rules).run()
        let closing: [String] = closed.notices
        #expect(closing == ["destination down: circuit closed, a message went out"], "\(closing)")
        handed = trace.state.withLock { $0.handed }
        #expect(Array(handed.suffix(4)) == down[6...].map(\.id))
        #expect(closed.sent == 4 && closed.heldBack == 0)
        #expect(try restarted.destinationStates(nil)["down"] == nil, "a closed breaker keeps no state")
    }

    /// `flush --watch` keeps one Flusher, and its scan, from run to run: a hold that
    /// ends by its time (a breaker's cool-down, a suspension until a time) must still
    /// start the scan again when nothing else changes in the queue.
    @Test func aKeptScanComesBackWhenAHoldEndsByItsTime() throws {
        let store = try loader.openStore("sqlite:\(temporaryDirectory())/q.sqlite")
        let down = (0..<3).map { Fixtures.message($0, to: "down", createdOffset: Int64($0)) }
        let later = (0..<2).map { Fixtures.message(10 + $0, to: "later", createdOffset: 10 + Int64($0)) }
        _ = try store.add(down + later)
        let isDown = Mutex(true)
        let trace = DeliveryTrace(failing: { m in m.to == "down" && isDown.withLock { $0 } })
        let clock = TestClock()
        _ = try Destinations(store: store).suspend("later", until: clock.read().adding(.seconds(5)), reason: "maintenance", now: clock.read())
        var rules = DeliveryRules()
        rules.breakerThreshold = 1
        rules.coolDown = .seconds(30)
        let f = try flusher(store, trace, clock: clock, rules: rules)
        let first = try f.run()
        #expect(first.heldBack == 4, "\(first)")
        #expect(trace.state.withLock { $0.handed } == [down[0].id])
        clock.advance(5_000)
        #expect(try f.run().sent == 2, "the suspension ended: the kept scan starts again")
        isDown.withLock { $0 = false }
        clock.advance(25_000)
        #expect(try f.run().sent == 2, "the cool-down ended: a probe, then the rest (the first failed: retry's)")
        #expect(trace.state.withLock { $0.handed } == [down[0].id] + later.map(\.id) + down[1...].map(\.id))
    }

    @Test func aDestinationThatAsksForAPauseGetsNothingUntilThenAndNoAttemptIsUsed() throws {
        let store = try loader.openStore("sqlite:\(temporaryDirectory())/q.sqlite")
        let slow = (0..<4).map { Fixtures.message($0, to: "api", createdOffset: Int64($0)) }
        let other = (0..<3).map { Fixtures.message(10 + $0, to: "other", createdOffset: 10 + Int64($0)) }
        _ = try store.add(slow + other)
        let limited = slow[0].id
        let trace = DeliveryTrace(answer: { m in m.id == limited ? .failed(MsgError(.rateLimited, "429"), retryAfter: .seconds(120)) : nil })
        let clock = TestClock()
        let summary = try flusher(store, trace, clock: clock).run()
        #expect(trace.state.withLock { $0.handed }.filter { id in slow.contains { $0.id == id } } == [limited], "paused after its answer")
        #expect(summary.sent == 3 && summary.deferred == 1 && summary.heldBack == 3 && summary.exitCode == 75, "\(summary)")
        #expect(summary.holds.first?.hasPrefix("destination api: paused until ") == true, "\(summary.holds)")
        var waiting: [Message] = []
        try store.list(Query(statuses: [.queued], to: "api")) { waiting.append($0.message); return true }
        #expect(waiting.count == 3 && waiting.allSatisfy { $0.attempts == 0 }, "no attempt used")
        #expect(try Destinations(store: store).why(waiting[0], now: clock.read())?.hasPrefix("paused: api asked to wait until") == true)
        clock.advance(121_000)
        #expect(try flusher(store, DeliveryTrace(), clock: clock).run().sent == 3, "then it goes")
    }

    @Test func anExpiredMessageIsNeverHandedToTheTransportEvenWhenClaimedJustBefore() throws {
        let store = try loader.openStore("sqlite:\(temporaryDirectory())/q.sqlite")
        var long = Fixtures.message(0, to: "d", createdOffset: 0)
        long.expiresAt = Fixtures.t0.adding(.seconds(3600))
        var soon = Fixtures.message(1, to: "d", createdOffset: 1)
        soon.expiresAt = Fixtures.t0.adding(MsgDuration(milliseconds: 100))
        var gone = Fixtures.message(2, to: "e", createdOffset: 2)
        gone.expiresAt = Fixtures.t0
        _ = try store.add([long, soon, gone])
        let clock = TestClock()
        // Delivering the first takes 200 ms: the second, claimed with it, expires meanwhile.
        let trace = DeliveryTrace(during: { _ in clock.advance(200) })
        let summary = try flusher(store, trace, clock: clock).run()
        #expect(trace.state.withLock { $0.handed } == [long.id])
        #expect(summary.sent == 1 && summary.dead == 2 && summary.exitCode == 1, "\(summary)")
        for id in [soon.id, gone.id] {
            let m = try #require(try store.get(id)?.message)
            #expect(m.status == .dead && m.lastError?.code == "expired" && m.history.last?.event == "expired" && m.attempts == 0)
        }
    }

    @Test func theBucketRefillsAtTheRateUpToTheBurst() throws {
        var s = DestinationState()
        let rate = try Rate(parsing: "2/s", burst: 3)
        let t = Fixtures.t0
        for _ in 0..<3 { #expect(s.takeToken(now: t, rate: rate) == nil) }
        #expect(s.takeToken(now: t, rate: rate) == t.adding(MsgDuration(milliseconds: 500)))
        #expect(s.takeToken(now: t.adding(MsgDuration(milliseconds: 499)), rate: rate) != nil)
        #expect(s.takeToken(now: t.adding(MsgDuration(milliseconds: 500)), rate: rate) == nil)
        s.dropFullBucket(now: t.adding(.seconds(60)), rate: rate)
        #expect(s.isEmpty, "a full bucket is not kept")
        #expect(DestinationState(text: s.text) == s)
        var rules = DeliveryRules()
        rules.coolDown = .seconds(30)
        rules.coolDownCap = .seconds(600)
        #expect([1, 2, 3, 6, 9].map { rules.coolDown(opens: $0).milliseconds } == [30_000, 60_000, 120_000, 600_000, 600_000])
        #expect(throws: MsgError.self) { try Rate(parsing: "10/x") }
    }

    /// A suspension comes first in the book, ends at its time, is forgotten by the
    /// first take after it, and survives the stored text.
    @Test func aSuspensionHoldsBeforeEveryOtherRuleUntilItEnds() {
        let t = Fixtures.t0
        var rules = DeliveryRules()
        rules.rate = Rate(count: 1, periodMilliseconds: 1000, burst: 1)
        let book = DestinationBook(rules: rules)
        var s = DestinationState()
        s.suspension = .init(since: t, until: t.adding(.seconds(60)), reason: "deploy")
        s.openUntil = t.adding(.seconds(600))
        #expect(DestinationState(text: s.text) == s)
        #expect(book.verdict(s, busy: true, probeInFlight: false, now: t) == .hold(.suspended(until: t.adding(.seconds(60)))))
        #expect(DestinationBook.Hold.suspended(until: nil).putsBack && DestinationBook.Hold.suspended(until: nil).until == nil)
        s.openUntil = nil
        let later = t.adding(.seconds(60))
        #expect(book.verdict(s, busy: false, probeInFlight: false, now: later) == .send(probe: false), "it ended at its time")
        book.take(&s, probe: false, id: "m", now: later)
        #expect(s.suspension == nil, "an ended suspension is forgotten")
        s.suspension = .init(since: t, until: nil, reason: "")
        #expect(book.verdict(s, busy: false, probeInFlight: false, now: t.adding(.seconds(86_400 * 365))) == .hold(.suspended(until: nil)))
        #expect(DestinationState(text: s.text).suspension?.until == nil)
    }
}
