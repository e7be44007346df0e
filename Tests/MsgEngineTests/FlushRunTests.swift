import MsgEngine
import MsgKit
import Testing

/// ``FlushRun`` alone, as PostgresNIO tests its state machines: events in, actions
/// out; no store, no thread, no clock but the times given.
@Suite struct FlushRunTests {
    let t0 = Timestamp(milliseconds: 1_800_000_000_000)

    func at(_ ms: Int64) -> Timestamp { Timestamp(milliseconds: t0.milliseconds + ms) }

    func run(batch: Int = 10, limit: Int? = nil, maxWait: Int64 = 60_000, pace: Rate? = nil) -> FlushRun {
        FlushRun(batchSize: batch, limit: limit, maxWait: MsgDuration(milliseconds: maxWait), pace: pace)
    }

    /// A batch claimed, another while fewer than a batch are pending, then the
    /// outcomes awaited; a claim that finds nothing ends the run once nothing is pending.
    @Test func claimsWhileFewerThanABatchArePendingThenDrains() {
        var r = run()
        #expect(r.next(now: t0, stopAsked: false, scanWake: nil) == .claim(10))
        r.claimed(taken: 10, expired: 0)
        #expect(r.next(now: t0, stopAsked: false, scanWake: nil) == .claim(10), "10 pending: at most half of 20")
        r.claimed(taken: 10, expired: 0)
        #expect(r.next(now: t0, stopAsked: false, scanWake: nil) == .receive(until: nil), "20 pending: the outcomes first")
        r.received(4)
        #expect(r.next(now: t0, stopAsked: false, scanWake: nil) == .receive(until: nil), "16 pending: still more than half")
        r.received(6)
        #expect(r.next(now: t0, stopAsked: false, scanWake: nil) == .claim(10))
        r.claimed(taken: 0, expired: 0)
        #expect(r.next(now: t0, stopAsked: false, scanWake: nil) == .receive(until: nil), "nothing more due: no claim")
        r.received(10)
        #expect(r.next(now: t0, stopAsked: false, scanWake: nil) == .claim(10), "an outcome may make something due")
        r.claimed(taken: 0, expired: 0)
        #expect(r.next(now: t0, stopAsked: false, scanWake: nil) == .finish)
        #expect(r.pending == 0)
    }

    /// The limit counts what was taken and what a claim found expired.
    @Test func theLimitEndsTheClaims() {
        var r = run(batch: 10, limit: 15)
        #expect(r.next(now: t0, stopAsked: false, scanWake: nil) == .claim(10))
        r.claimed(taken: 8, expired: 2)
        #expect(r.next(now: t0, stopAsked: false, scanWake: nil) == .claim(5), "what is left of the limit")
        r.claimed(taken: 5, expired: 0)
        #expect(r.next(now: t0, stopAsked: false, scanWake: nil) == .receive(until: nil))
        r.received(13)
        #expect(r.next(now: t0, stopAsked: false, scanWake: at(1000)) == .finish, "the limit reached: no wait for a destination")
    }

    /// A stop takes back once what waits for a worker, claims nothing more, awaits
    /// what was handed out without a time, and ends.
    @Test func aStopTakesBackWhatWaitsAndDrains() {
        var r = run()
        _ = r.next(now: t0, stopAsked: false, scanWake: nil)
        r.claimed(taken: 10, expired: 0)
        #expect(r.next(now: t0, stopAsked: true, scanWake: at(500)) == .withdrawAll)
        r.withdrew(7)
        #expect(r.stopping)
        #expect(r.next(now: t0, stopAsked: true, scanWake: at(500)) == .receive(until: nil), "three were out: awaited, however long")
        r.received(3)
        #expect(r.next(now: t0, stopAsked: true, scanWake: at(500)) == .finish, "no wait for a destination when stopping")
    }

    /// Nothing pending and nothing due: a destination due within the run's patience
    /// is waited for, then claimed again; one past it ends the run.
    @Test func waitsForADestinationWithinItsPatience() {
        var r = run(maxWait: 2000)
        _ = r.next(now: t0, stopAsked: false, scanWake: nil)
        r.claimed(taken: 0, expired: 0)
        #expect(r.next(now: t0, stopAsked: false, scanWake: at(1500)) == .wait(until: at(1500)))
        #expect(r.next(now: at(1500), stopAsked: false, scanWake: nil) == .claim(10), "after the wait, a claim")
        r.claimed(taken: 0, expired: 0)
        #expect(r.next(now: at(1500), stopAsked: false, scanWake: at(4000)) == .finish, "2.5 s away: past its patience")
    }

    /// While messages are pending, their outcomes are awaited only until a
    /// destination's time; then a claim is tried again.
    @Test func outcomesAreAwaitedUntilADestinationsTime() {
        var r = run()
        _ = r.next(now: t0, stopAsked: false, scanWake: nil)
        r.claimed(taken: 10, expired: 0)
        _ = r.next(now: t0, stopAsked: false, scanWake: nil)
        r.claimed(taken: 0, expired: 0)
        #expect(r.next(now: t0, stopAsked: false, scanWake: at(300)) == .receive(until: at(300)))
        r.timedOut()
        #expect(r.next(now: at(300), stopAsked: false, scanWake: nil) == .claim(10))
    }

    /// `retry --pace 2/s`: a claim takes only the tokens there are; the run waits
    /// for the next token, and never passes the pace.
    @Test func thePaceCutsClaimsAndWaitsForTokens() throws {
        var r = run(pace: try Rate(parsing: "2/s", burst: 2))
        #expect(r.next(now: t0, stopAsked: false, scanWake: nil) == .claim(2), "two tokens")
        r.claimed(taken: 2, expired: 0)
        #expect(r.next(now: t0, stopAsked: false, scanWake: nil) == .receive(until: at(500)), "the next token in 500 ms")
        r.received(2)
        #expect(r.next(now: at(100), stopAsked: false, scanWake: nil) == .wait(until: at(500)), "no token yet: wait for it")
        #expect(r.next(now: at(500), stopAsked: false, scanWake: nil) == .claim(1))
    }
}

extension FlushRun {
    /// ``next(now:stopAsked:)`` with the run's scan holding one destination paused
    /// until `scanWake` (nil: nothing held), the scan's only say in what comes next.
    mutating func next(now: Timestamp, stopAsked: Bool, scanWake: Timestamp?) -> Action {
        scan = ClaimScan()
        if let scanWake { scan.hold("paused", .paused(until: scanWake)) }
        return next(now: now, stopAsked: stopAsked)
    }
}
