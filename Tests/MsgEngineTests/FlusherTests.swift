#if canImport(Glibc)
import Glibc
#endif
import MsgEngine
import MsgKit
import MsgKitTesting
import Synchronization
import Testing

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let now = Mutex(Fixtures.t0)
    func read() -> Timestamp { now.withLock { $0 } }
    func advance(_ ms: Int64) { now.withLock { $0 = $0.adding(MsgDuration(milliseconds: ms)) } }
}

func temporaryDirectory() -> String {
    var template = Array("/tmp/msg-engine-XXXXXX".utf8CString)
    let path = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    return String(cString: path!)
}

@Suite struct FlusherTests {
    let loader = PluginLoader()

    func flusher(_ store: any Store, _ transport: String, _ clock: TestClock, statuses: Set<Status> = [.queued]) throws -> Flusher {
        var options = Flusher.Options()
        options.statuses = statuses
        let devNull = open("/dev/null", O_WRONLY)
        return Flusher(store: store, transport: try loader.openTransport(transport), policy: RetryPolicy(), options: options,
                       faults: try FaultPoints(environment: nil), console: Console(input: -1, output: devNull, error: devNull, reporter: Reporter { _ in }),
                       clock: clock.read, unit: { 0.5 })
    }

    @Test func backoffIsHonouredToTheMillisecondWithoutSleeping() throws {
        let clock = TestClock()
        let store = try loader.openStore("json:\(temporaryDirectory())/q.json")
        _ = try store.add([Fixtures.message(1)])
        let devNull = open("/dev/null", O_WRONLY)
        let transport = "stdout:?fail_first=2&fd=\(devNull)"

        #expect(try flusher(store, transport, clock).run() == .init(sent: 0, deferred: 1, dead: 0))
        var m = try #require(try store.get(Fixtures.message(1).id)?.message)
        #expect(m.status == .failed && m.attempts == 1)
        #expect(m.nextAttemptAt == Fixtures.t0.adding(MsgDuration(milliseconds: 1050)), "1s + 5% jitter")

        let retry = try flusher(store, transport, clock, statuses: [.failed])
        clock.advance(1049)
        #expect(try retry.run().deferred == 0, "not due 1 ms early")
        #expect(try store.get(m.id)?.message.attempts == 1)
        clock.advance(1)
        #expect(try retry.run().deferred == 1, "due on the millisecond")
        m = try #require(try store.get(m.id)?.message)
        #expect(m.attempts == 2)
        #expect(m.nextAttemptAt == Fixtures.t0.adding(MsgDuration(milliseconds: 1050 + 2100)), "then 2s + 5%")

        clock.advance(2100)
        #expect(try retry.run().sent == 1, "sent on the third attempt")
        m = try #require(try store.get(m.id)?.message)
        #expect(m.status == .sent && m.attempts == 3)
        #expect(m.history.map(\.event) == ["queued", "attempt", "failed", "attempt", "failed", "attempt", "sent"])
    }

    /// `flush --watch` runs one Flusher again and again, keeping its scan: a run
    /// goes on where the last one stopped (a million waiting behind held
    /// destinations are not walked again each second), yet still finds what
    /// another process added and what became due since.
    @Test func aKeptScanFindsWhatOthersAddAndWhatBecomesDue() throws {
        let clock = TestClock()
        let url = "sqlite:\(temporaryDirectory())/q.sqlite"
        let store = try loader.openStore(url)
        let other = try loader.openStore(url)
        let ms = (0..<3).map { Fixtures.message($0, to: "r\($0)", createdOffset: Int64($0)) }
        _ = try store.add([ms[0], ms[1]])
        let devNull = open("/dev/null", O_WRONLY)
        // Each message's first attempt fails (then it waits 1,050 ms), its second goes.
        let f = try flusher(store, "stdout:?fail_first=1&fd=\(devNull)", clock, statuses: [.queued, .failed])
        #expect(try f.run() == .init(sent: 0, deferred: 2, dead: 0))
        #expect(try f.run() == .init(), "nothing is due: the kept scan finds nothing")
        _ = try other.add([ms[2]])
        #expect(try f.run().deferred == 1, "what another process added is found (and tried)")
        clock.advance(1049)
        #expect(try f.run() == .init(), "not due 1 ms early")
        clock.advance(1)
        #expect(try f.run().sent == 3, "the three failed ones, due now, behind the scan, are found")
        #expect(try ms.map { try store.get($0.id)?.message.status } == [.sent, .sent, .sent])
    }

    @Test func aFailedMessageDoesNotBlockTheOnesBehindIt() throws {
        let clock = TestClock()
        let store = try loader.openStore("json:\(temporaryDirectory())/q.json")
        let ms = (0..<3).map { Fixtures.message($0, createdOffset: Int64($0)) }
        _ = try store.add(ms)
        let devNull = open("/dev/null", O_WRONLY)
        let summary = try flusher(store, "stdout:?fail_ids=\(ms[0].id)&error=rejected&fd=\(devNull)", clock).run()
        #expect(summary == .init(sent: 2, deferred: 0, dead: 1))
        #expect(summary.exitCode == 1)
        #expect(try store.get(ms[0].id)?.message.status == .dead)
    }

    @Test func recoverLeavesALiveSenderAloneAndUsesLookup() throws {
        let clock = TestClock()
        let dir = temporaryDirectory()
        let store = try loader.openStore("json:\(dir)/q.json")
        let transport = try loader.openTransport("file:\(dir)/drop")
        func sending(_ n: Int, pid: Int32) throws -> Message {
            var m = Fixtures.message(n)
            try m.transition(to: .sending, event: "attempt", at: Fixtures.t0)
            m.lease = .init(host: Owner.host, pid: pid, until: Fixtures.t0.adding(.seconds(600)))
            return m
        }
        let alive = try sending(1, pid: getpid())
        let deadDelivered = try sending(2, pid: 999_999)
        let deadNotDelivered = try sending(3, pid: 999_999)
        _ = try store.add([alive, deadDelivered, deadNotDelivered])
        _ = transport.deliver([EncodedMessage(deadDelivered)], deadline: .seconds(3))
        clock.advance(10_000)
        let recoverer = Recoverer(store: store, transport: transport, staleAfter: .seconds(5), clock: clock.read)
        var reported: [String] = []
        let dry = try recoverer.run(dryRun: true) { (m) throws(MsgError) in reported.append(m.message.id) }
        #expect(dry == .init(markedSent: 1, requeued: 1, alive: 1))
        #expect(try store.count(Query(statuses: [.sending])) == 3, "a dry run changes nothing")
        let summary = try recoverer.run(dryRun: false) { (_) throws(MsgError) in }
        #expect(summary == .init(markedSent: 1, requeued: 1, alive: 1))
        #expect(try store.get(alive.id)?.message.status == .sending, "its sender is alive")
        #expect(try store.get(deadDelivered.id)?.message.status == .sent)
        #expect(try store.get(deadNotDelivered.id)?.message.status == .queued)
        #expect(try store.get(deadNotDelivered.id)?.message.history.last?.event == "recovered")
        #expect(try recoverer.run(dryRun: false) { (_) throws(MsgError) in } == .init(alive: 1), "a second pass finds nothing more")
    }
}

/// A transport that delivers everything and asks the flusher to stop after its
/// first call, as a signal arriving mid-flush would.
final class StoppingTransport: Transport {
    let stop: StopRequest
    var calls: [Int] = []
    init(stop: StopRequest) { self.stop = stop }
    func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> [DeliveryOutcome] {
        calls.append(records.count)
        stop.outputClosed()
        return records.map { _ in .delivered(confirmed: false) }
    }
}

@Suite struct FlusherStopTests {
    @Test func aStopPutsBackWhatWasClaimedButNotAttemptedExactlyAsItWas() throws {
        let store = try PluginLoader().openStore("json:\(temporaryDirectory())/q.json")
        let originals = (0..<300).map { Fixtures.message($0, createdOffset: Int64($0)) }
        _ = try store.add(originals)
        let stop = StopRequest(watchesSignals: false)
        let transport = StoppingTransport(stop: stop)
        var options = Flusher.Options()
        options.batchSize = 100
        let devNull = open("/dev/null", O_WRONLY)
        let summary = try Flusher(store: store, transport: transport, policy: RetryPolicy(), options: options,
                                  faults: try FaultPoints(environment: nil), console: Console(input: -1, output: devNull, error: devNull, reporter: Reporter { _ in }),
                                  stop: stop).run()
        #expect(transport.calls == [1], "one slice, then the stop was honoured")
        // The next batch is claimed while the first is delivered: it may be out too.
        #expect(summary.sent == 1 && [100 - 1, 200 - 1].contains(summary.released) && summary.stopped == .closedOutput,
                "nothing claimed after the stop: \(summary)")
        #expect(try store.count(Query(statuses: [.sending])) == 0)
        var after: [Message] = []
        try store.list(Query(statuses: [.queued])) { after.append($0.message); return true }
        #expect(after == Array(originals[1...]), "put back untouched, in FIFO order")
    }
}

/// A transport that delivers its first `good` messages, then says it cannot
/// deliver as configured (as a refused token does).
final class MisconfiguredTransport: Transport {
    var good: Int
    init(good: Int) { self.good = good }
    func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> [DeliveryOutcome] {
        records.map { _ in
            good -= 1
            return good >= 0 ? .delivered(confirmed: false) : .failed(MsgError(.config, "refused: check the token"), retryAfter: nil)
        }
    }
}

@Suite struct FlusherMisconfigurationTests {
    @Test func aConfigOutcomeStopsTheRunAndPutsTheRestBackUnattempted() throws {
        let store = try PluginLoader().openStore("json:\(temporaryDirectory())/q.json")
        let originals = (0..<50).map { Fixtures.message($0, createdOffset: Int64($0)) }
        _ = try store.add(originals)
        var options = Flusher.Options()
        options.batchSize = 10
        let devNull = open("/dev/null", O_WRONLY)
        let summary = try Flusher(store: store, transport: MisconfiguredTransport(good: 3), policy: RetryPolicy(), options: options,
                                  faults: try FaultPoints(environment: nil), console: Console(input: -1, output: devNull, error: devNull, reporter: Reporter { _ in }),
                                  stop: StopRequest(watchesSignals: false)).run()
        #expect(summary.sent == 3 && summary.deferred == 0 && summary.dead == 0, "\(summary)")
        #expect(summary.misconfigured?.code == .config && summary.misconfigured?.message == "refused: check the token")
        #expect(try store.count(Query(statuses: [.sending])) == 0 && store.count(Query(statuses: [.sent])) == 3)
        var after: [Message] = []
        try store.list(Query(statuses: [.queued])) { after.append($0.message); return true }
        #expect(after == Array(originals[3...]), "the refused one and the rest are back untouched: no attempt counted")
    }
}

@Suite struct SliceSizerTests {
    @Test func growsWhileFastShrinksWhenSlowAndIgnoresShortSlices() {
        var s = SliceSizer(target: MsgDuration(milliseconds: 200), maximum: 1024, start: 16)
        s.observe(count: 16, elapsed: MsgDuration(milliseconds: 99))
        #expect(s.size == 32, "under half the target: doubles")
        s.observe(count: 32, elapsed: MsgDuration(milliseconds: 100))
        #expect(s.size == 32, "between half and twice: stays")
        s.observe(count: 5, elapsed: MsgDuration(milliseconds: 1))
        #expect(s.size == 32, "the end of a batch says nothing")
        s.observe(count: 32, elapsed: MsgDuration(milliseconds: 401))
        #expect(s.size == 16, "over twice the target: halves")
        for _ in 0..<20 { s.observe(count: s.size, elapsed: .seconds(0)) }
        #expect(s.size == 1024, "never past the batch")
        for _ in 0..<20 { s.observe(count: s.size, elapsed: .seconds(60)) }
        #expect(s.size == 1, "never below one")
        #expect(SliceSizer(maximum: 4).size == 1, "the first call is one message")
        #expect(SliceSizer(maximum: 4, start: 16).size == 4)
    }
}
