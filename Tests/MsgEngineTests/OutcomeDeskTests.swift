#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MsgEngine
import MsgKit
import MsgKitTesting
import Testing

/// ``OutcomeDesk``, which writes and says an outcome, with the run's state machine
/// that decides it: a slice's outcomes in, and out what the store holds, what was
/// printed, what the run notes, what the scan holds and what the scheduler gives.
/// No `Flusher`, no delivery thread, no transport; a JSON store in a temporary
/// directory. The decisions alone are tested in ``FlushRunOutcomeTests``.
@Suite struct OutcomeDeskTests {
    let now = Fixtures.t0.adding(.seconds(10))

    /// A desk over a new store, printing into a file.
    struct Bench {
        let store: any Store
        /// The run's state machine: its scan, its notes.
        var run: FlushRun
        /// The one lane's scheduler, and the lanes the desk is given (one).
        let keys = KeyScheduler(workers: 1)
        var scheduler: LaneSchedulers { LaneSchedulers([keys], lane: { _ in 0 }) }
        let desk: OutcomeDesk
        let printed: String
        var notes: RunNotes { run.notes }
        var scan: ClaimScan { run.scan }

        init(rules: DeliveryRules = DeliveryRules(), now: Timestamp) throws {
            let dir = temporaryDirectory()
            store = try PluginLoader().openStore("json:\(dir)/q.json")
            printed = "\(dir)/out.ndjson"
            run = FlushRun(batchSize: 10, limit: nil, maxWait: .seconds(60), pace: nil, rules: rules)
            let fd = open(printed, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            desk = OutcomeDesk(store: store, rules: rules, faults: try FaultPoints(environment: nil), clock: { now },
                               writer: NDJSONWriter(output: ByteOutput(fd: fd)), reporter: Reporter { _ in }, events: nil,
                               outcomeLog: nil, stop: StopRequest(watchesSignals: false))
        }

        /// `n` messages to `to`, stored, then claimed (`sending`) as a claim leaves them.
        mutating func claimed(_ n: Int, to: String, from: Int = 0) throws -> [Claimer.Claimed] {
            var out: [Claimer.Claimed] = []
            for i in from..<(from + n) {
                let m = Fixtures.message(i, to: to, createdOffset: Int64(i))
                _ = try store.add([EncodedMessage(m)])
                var x = m
                try x.transition(to: .sending, event: "attempt", at: Fixtures.t0.adding(.seconds(1)))
                x.lease = Message.Lease(host: "here", pid: 1, until: Fixtures.t0.adding(.seconds(600)))
                #expect(try store.update([Change(EncodedMessage(x), expected: .queued)]) == [true])
                out.append(Claimer.Claimed(record: EncodedMessage(x), original: EncodedMessage(m), key: to, probe: false))
            }
            run.claimed(Claimer.Round(taken: out))
            return out
        }

        /// What `outcome` makes of `c`, as a worker works it out.
        func change(_ c: Claimer.Claimed, _ outcome: DeliveryOutcome, at now: Timestamp) throws -> Change {
            var x = c.record.message
            try RetryPolicy().apply(outcome, to: &x, now: now, unit: 0.5)
            return Change(EncodedMessage(updating: c.record, to: x), expected: .sending)
        }

        func status(_ c: Claimer.Claimed) throws -> Status? { try store.get(c.record.message.id)?.message.status }

        /// The records printed, by status.
        func printedStatuses() throws -> [String] {
            try String(contentsOfFile: printed, encoding: .utf8).split(separator: "\n").map { line in
                (try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["status"] as? String ?? "?"
            }
        }
    }

    @Test func deliveredOutcomesAreRecordedPrintedAndNoLongerInFlight() throws {
        var b = try Bench(now: now)
        let slice = try b.claimed(2, to: "k")
        let o = Dispatcher.Outcomes(items: slice, changes: try slice.map { try b.change($0, .delivered(confirmed: false), at: now) },
                                    outcomes: [.delivered(confirmed: false), .delivered(confirmed: false)], failedKeys: [])
        var summary = Flusher.Summary()
        try b.desk.settle(o, b.scheduler, run: &b.run, into: &summary)
        #expect(b.run.pending == 0)
        #expect(summary.sent == 2 && summary.deferred == 0 && summary.dead == 0)
        #expect(try slice.map(b.status) == [.sent, .sent])
        #expect(try b.printedStatuses() == ["sent", "sent"])
        #expect(b.notes.inFlight.isEmpty)
        #expect(b.notes.lessons.isEmpty, "a success at a destination with nothing to forget teaches nothing")
    }

    /// A failure that opens the destination's breaker: the failed message waits its
    /// backoff, what waits for the destination goes back to the queue untouched, the
    /// scan holds it, and the lesson is noted for the next claim.
    @Test func aFailureThatOpensTheBreakerPutsBackWhatWaits() throws {
        var rules = DeliveryRules()
        rules.breakerThreshold = 1
        var b = try Bench(rules: rules, now: now)
        let slice = try b.claimed(1, to: "k")
        let waiting = try b.claimed(2, to: "k", from: 1)
        b.scheduler.add(waiting)
        let failure = DeliveryOutcome.failed(MsgError(.remote, "503"), retryAfter: nil)
        let o = Dispatcher.Outcomes(items: slice, changes: [try b.change(slice[0], failure, at: now)], outcomes: [failure], failedKeys: ["k"])
        var summary = Flusher.Summary()
        #expect(b.run.pending == 3)
        try b.desk.settle(o, b.scheduler, run: &b.run, into: &summary)
        #expect(b.run.pending == 0, "the one recorded, the two waiting taken back")
        #expect(b.keys.withdrawAll().isEmpty, "nothing waits for a worker")
        #expect(summary.deferred == 1 && summary.lastFailure?.code == "remote")
        #expect(try b.status(slice[0]) == .failed)
        #expect(try waiting.map(b.status) == [.queued, .queued], "put back as they were")
        #expect(try waiting.map { try b.store.get($0.record.message.id)?.message.attempts } == [0, 0], "no attempt counted")
        #expect(b.scan.holds.held["k"] != nil, "the scan holds it until the breaker's time")
        #expect(!b.notes.lessons.isEmpty && b.notes.known["k"] != nil, "noted for the next claim")
        #expect(b.notes.inFlight.isEmpty)
        #expect(try b.printedStatuses() == ["failed"], "only what was attempted is printed")
    }

    /// A failure that leaves the breaker closed makes the destination cautious: the
    /// scheduler hands its messages out one a slice until a success.
    @Test func aFailureMakesItsDestinationCautiousUntilASuccess() throws {
        var b = try Bench(now: now)
        let first = try b.claimed(1, to: "k")
        let failure = DeliveryOutcome.failed(MsgError(.timeout, "slow"), retryAfter: nil)
        var summary = Flusher.Summary()
        try b.desk.settle(Dispatcher.Outcomes(items: first, changes: [try b.change(first[0], failure, at: now)], outcomes: [failure],
                                              failedKeys: ["k"]), b.scheduler, run: &b.run, into: &summary)
        let next = try b.claimed(3, to: "k", from: 1)
        b.scheduler.add(next)
        // A take that would wait is never asked for: what is left is known first.
        try #require(b.keys.take(size: 10, parallelism: 1)?.count == 1, "cautious: one at a time")
        let ok = DeliveryOutcome.delivered(confirmed: false)
        try b.desk.settle(Dispatcher.Outcomes(items: [next[0]], changes: [try b.change(next[0], ok, at: now)], outcomes: [ok],
                                              failedKeys: []), b.scheduler, run: &b.run, into: &summary)
        #expect(b.keys.take(size: 10, parallelism: 1)?.count == 2, "recovered: the rest at once")
    }

    /// What a stop put back, and an outcome whose row changed meanwhile, are not
    /// counted as attempts; both leave the run's notes.
    @Test func aPutBackAndAChangedRowAreNotCounted() throws {
        var b = try Bench(now: now)
        let slice = try b.claimed(2, to: "k")
        var summary = Flusher.Summary()
        // The second was taken out of `sending` by someone else (recover, an operator).
        var other = slice[1].record.message
        other.lease = nil
        try other.transition(to: .queued, event: "recovered", at: now)
        #expect(try b.store.update([Change(EncodedMessage(other), expected: .sending)]) == [true])
        let ok = DeliveryOutcome.delivered(confirmed: false)
        let o = Dispatcher.Outcomes(items: slice, changes: [Change(slice[0].original, expected: .sending), try b.change(slice[1], ok, at: now)],
                                    outcomes: [nil, ok], failedKeys: [])
        try b.desk.settle(o, b.scheduler, run: &b.run, into: &summary)
        #expect(summary.released == 1 && summary.sent == 0, "the put-back counted as released; the changed row not at all")
        #expect(try slice.map(b.status) == [.queued, .queued])
        #expect(b.notes.inFlight.isEmpty)
        #expect(try b.printedStatuses().isEmpty)
    }

    /// The messages a claim found expired are dead: counted and printed.
    @Test func expiredMessagesAreDeadAndPrinted() throws {
        let b = try Bench(now: now)
        var m = Fixtures.message(1, to: "k")
        m.expiresAt = Fixtures.t0
        let dead = try DestinationBook.expire(m, now: now)
        var summary = Flusher.Summary()
        b.desk.expired([EncodedMessage(dead)], into: &summary)
        #expect(summary.dead == 1 && summary.lastFailure?.code == "expired")
        #expect(try b.printedStatuses() == ["dead"])
    }
}
