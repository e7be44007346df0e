import MsgEngine
import MsgKit
import MsgKitTesting
import Testing

/// What ``FlushRun`` decides of outcomes, stops and outages, as PostgresNIO tests
/// its state machines: events in (a claim, a slice recorded with which changes
/// applied, messages withdrawn, the store back), effects and state out. No store,
/// no thread, no clock but the times given.
@Suite struct FlushRunOutcomeTests {
    let now = Fixtures.t0.adding(.seconds(10))
    static let delivered = DeliveryOutcome.delivered(confirmed: false)
    static let failure = DeliveryOutcome.failed(MsgError(.remote, "503"), retryAfter: nil)
    static let rejection = DeliveryOutcome.failed(MsgError(.rejected, "no such user"), retryAfter: nil)
    static let rateLimited = DeliveryOutcome.failed(MsgError(.rateLimited, "slow down"), retryAfter: .seconds(30))

    func run(_ rules: DeliveryRules = DeliveryRules(), batch: Int = 10) -> FlushRun {
        FlushRun(batchSize: batch, limit: nil, maxWait: .seconds(60), pace: nil, rules: rules)
    }

    /// `n` messages to `to`, claimed (`sending`) and told to the run as one claim.
    func claim(_ n: Int, to: String, from: Int = 0, probe: Bool = false, into r: inout FlushRun) throws -> [Claimer.Claimed] {
        var out: [Claimer.Claimed] = []
        for i in from..<(from + n) {
            let m = Fixtures.message(i, to: to, createdOffset: Int64(i))
            var x = m
            try x.transition(to: .sending, event: "attempt", at: Fixtures.t0.adding(.seconds(1)))
            out.append(Claimer.Claimed(record: EncodedMessage(x), original: EncodedMessage(m), key: to, probe: probe))
        }
        r.claimed(Claimer.Round(taken: out))
        return out
    }

    /// The slice of `items` with their outcomes (nil: put back as it was), as a worker hands it back.
    func slice(_ items: [Claimer.Claimed], _ outcomes: [DeliveryOutcome?], failedKeys: Set<String>? = nil) throws -> Dispatcher.Outcomes {
        let changes = try zip(items, outcomes).map { (c, outcome) -> Change in
            guard let outcome else { return Change(c.original, expected: .sending) }
            var x = c.record.message
            try RetryPolicy().apply(outcome, to: &x, now: now, unit: 0.5)
            return Change(EncodedMessage(updating: c.record, to: x), expected: .sending)
        }
        let failed = failedKeys ?? Set(zip(items, outcomes).compactMap { c, o in
            if case .failed? = o { return c.key } else { return nil }
        })
        return Dispatcher.Outcomes(items: items, changes: changes, outcomes: outcomes, failedKeys: failed)
    }

    func recorded(_ o: Dispatcher.Outcomes, _ r: inout FlushRun, applied: [Bool]? = nil) -> [FlushRun.Effect] {
        r.recorded(o, applied: applied ?? o.changes.map { _ in true }, now: now)
    }

    func position(_ n: Int64) -> ClaimPosition {
        ClaimPosition(createdAt: Fixtures.t0.adding(MsgDuration(milliseconds: n)), id: "m\(n)")
    }

    // MARK: outcomes told

    @Test func aDeliveredSliceIsToldSentAndLeavesNothingInFlight() throws {
        var r = run()
        let items = try claim(2, to: "k", into: &r)
        #expect(r.pending == 2 && r.notes.inFlight.count == 2)
        let effects = recorded(try slice(items, [Self.delivered, Self.delivered]), &r)
        #expect(effects == [.tell(0, .sent), .tell(1, .sent)])
        #expect(r.pending == 0 && r.notes.inFlight.isEmpty)
        #expect(r.notes.lessons.isEmpty, "a success at a destination with nothing to forget teaches nothing")
    }

    @Test func aChangeTheStoreDidNotApplyIsNotToldButLeavesFlight() throws {
        var r = run()
        let items = try claim(2, to: "k", into: &r)
        let effects = recorded(try slice(items, [Self.delivered, Self.delivered]), &r, applied: [false, true])
        #expect(effects == [.tell(1, .sent)], "the row changed meanwhile (recover, an operator): not ours to tell")
        #expect(r.notes.inFlight.isEmpty && r.pending == 0)
    }

    @Test func aRetryableFailureIsDeferredAndARejectionDead() throws {
        var r = run()
        let items = try claim(2, to: "k", into: &r)
        let effects = recorded(try slice(items, [Self.failure, Self.rejection]), &r)
        #expect(effects.contains(.tell(0, .deferred)) && effects.contains(.tell(1, .dead)))
        #expect(effects.last == .done(["k"]), "the workers go on with the destination once recorded")
    }

    @Test func aPutBackAsItWasIsReleasedAndGoesBehindTheScan() throws {
        var r = run()
        let items = try claim(1, to: "k", into: &r)
        r.scan.hold("k", .busy, from: position(3), own: true)
        let effects = recorded(try slice(items, [nil]), &r)
        #expect(effects == [.tell(0, .released)])
        #expect(r.scan.holds.held["k"]?.from == nil, "behind the scan: ending the hold starts it from the first message")
        #expect(r.scan.holds.held["k"]?.freed == true)
    }

    @Test func aMessageExpiredBeforeItsTurnIsToldDeadAndNotPutBehind() throws {
        var r = run()
        let items = try claim(1, to: "k", into: &r)
        var m = items[0].original.message
        m.expiresAt = Fixtures.t0
        let dead = try DestinationBook.expire(m, now: now)
        r.scan.hold("k", .busy, from: position(3), own: true)
        let o = Dispatcher.Outcomes(items: items, changes: [Change(EncodedMessage(dead), expected: .sending)], outcomes: [nil], failedKeys: [])
        #expect(recorded(o, &r) == [.tell(0, .dead)])
        #expect(r.scan.holds.held["k"]?.from == position(3), "it is not queued again: the scan's place stands")
    }

    // MARK: caution

    @Test func aFailureMakesItsDestinationCautiousOnce() throws {
        var r = run()
        let first = try claim(1, to: "k", into: &r)
        #expect(recorded(try slice(first, [Self.failure]), &r).contains(.caution("k", true)))
        let second = try claim(1, to: "k", from: 1, into: &r)
        #expect(!recorded(try slice(second, [Self.failure]), &r).contains(.caution("k", true)), "told the scheduler once")
        #expect(r.notes.cautious == ["k"])
    }

    @Test func aSuccessEndsCautionUnlessItsDestinationFailedInTheSameSlice() throws {
        var r = run()
        _ = recorded(try slice(try claim(1, to: "k", into: &r), [Self.failure]), &r)
        let mixed = try claim(2, to: "k", from: 1, into: &r)
        #expect(!recorded(try slice(mixed, [Self.delivered, Self.failure]), &r).contains(.caution("k", false)),
                "a failure in the same slice keeps it cautious")
        let ok = try claim(1, to: "k", from: 3, into: &r)
        #expect(recorded(try slice(ok, [Self.delivered]), &r).contains(.caution("k", false)))
        #expect(r.notes.cautious.isEmpty)
    }

    @Test func aSuccessElsewhereChangesNoCaution() throws {
        var r = run()
        _ = recorded(try slice(try claim(1, to: "k", into: &r), [Self.failure]), &r)
        let other = try claim(1, to: "j", from: 1, into: &r)
        #expect(recorded(try slice(other, [Self.delivered]), &r) == [.tell(0, .sent)])
        #expect(r.notes.cautious == ["k"])
    }

    // MARK: holds

    @Test func aFailureThatOpensTheBreakerWithdrawsWhatWaitsAndHoldsTheScan() throws {
        var rules = DeliveryRules()
        rules.breakerThreshold = 1
        var r = run(rules)
        let items = try claim(1, to: "k", into: &r)
        let effects = recorded(try slice(items, [Self.failure]), &r)
        #expect(effects == [.caution("k", true), .tell(0, .deferred), .withdraw("k"), .done(["k"])])
        guard case .open? = r.scan.holds.held["k"]?.why else {
            Issue.record("the scan holds k until its cool-down")
            return
        }
        #expect(!r.notes.lessons.isEmpty && r.notes.known["k"] != nil, "noted for the next claim")
    }

    @Test func aFailureBelowTheThresholdWithdrawsNothing() throws {
        var rules = DeliveryRules()
        rules.breakerThreshold = 3
        var r = run(rules)
        let effects = recorded(try slice(try claim(1, to: "k", into: &r), [Self.failure]), &r)
        #expect(!effects.contains(.withdraw("k")) && effects.last == .done(["k"]))
        #expect(r.scan.holds.held["k"] == nil)
    }

    @Test func aDestinationThatAskedForAPauseIsWithdrawnAndWakesTheRun() throws {
        var r = run()
        let items = try claim(2, to: "k", into: &r)
        let effects = recorded(try slice([items[0]], [Self.rateLimited]), &r)
        #expect(effects.contains(.withdraw("k")))
        let until = now.adding(.seconds(30))
        #expect(r.scan.holds.held["k"]?.why == .paused(until: until))
        r.withdrew([items[1]])
        #expect(r.pending == 0)
        #expect(r.next(now: now, stopAsked: false) == .claim(10), "something may be due elsewhere")
        r.claimed(Claimer.Round())
        #expect(r.next(now: now, stopAsked: false) == .wait(until: until), "then the pause's end, within the run's patience")
    }

    @Test func withdrawnMessagesLeaveFlightAndGoBehindTheScan() throws {
        var r = run()
        let items = try claim(3, to: "k", into: &r)
        r.scan.hold("k", .busy, from: position(2), own: true)
        r.withdrew(Array(items[1...]))
        #expect(r.pending == 1 && r.notes.inFlight == [items[0].record.message.id])
        #expect(r.scan.holds.held["k"]?.from == nil)
    }

    // MARK: lessons

    @Test func withEveryMessageItsOwnDestinationNothingIsLearnt() throws {
        var rules = DeliveryRules()
        rules.key = .id
        rules.breakerThreshold = 1
        var r = run(rules)
        let items = try claim(1, to: "k", into: &r)
        let key = items[0].key
        let effects = recorded(try slice(items, [Self.failure], failedKeys: [key]), &r)
        #expect(!effects.contains(.withdraw(key)) && r.notes.lessons.isEmpty && r.notes.known.isEmpty)
    }

    @Test func aProbesSuccessIsLearntAndClosesTheBreaker() throws {
        var rules = DeliveryRules()
        rules.breakerThreshold = 1
        var r = run(rules)
        _ = recorded(try slice(try claim(1, to: "k", into: &r), [Self.failure]), &r)
        let probe = try claim(1, to: "k", from: 1, probe: true, into: &r)
        _ = recorded(try slice(probe, [Self.delivered]), &r)
        #expect(r.notes.lessons.map(\.lesson).contains(.succeeded))
        #expect(r.notes.lessons.contains { if case .probeReturned = $0.lesson { true } else { false } })
    }

    @Test func aClaimThatStoredTheLessonsTakesOnlyThoseFromTheNotes() throws {
        var r = run()
        _ = recorded(try slice(try claim(1, to: "k", into: &r), [Self.failure]), &r)
        let stored = r.notes.lessons.count
        try #require(stored > 0)
        _ = recorded(try slice(try claim(1, to: "j", from: 1, into: &r), [Self.failure]), &r)
        var known = DestinationState()
        known.pause(until: now.adding(.seconds(5)))
        r.claimed(Claimer.Round(known: ["x": known], lessonsStored: stored))
        #expect(r.notes.lessons.map(\.key) == ["j"], "learnt while the claim ran: for the next one")
        #expect(r.notes.known["x"] == known)
    }

    // MARK: the run's loop

    @Test func recordedOutcomesLetTheRunClaimAgain() throws {
        var r = run()
        #expect(r.next(now: now, stopAsked: false) == .claim(10))
        let items = try claim(2, to: "k", into: &r)
        r.claimed(Claimer.Round())
        #expect(r.next(now: now, stopAsked: false) == .receive(until: nil), "nothing more due")
        _ = recorded(try slice(items, [Self.delivered, Self.delivered]), &r)
        #expect(r.next(now: now, stopAsked: false) == .claim(10), "an outcome may make something due")
    }

    @Test func aStopWithWorkInFlightPutsBackWhatWaitsAndAwaitsTheRest() throws {
        var r = run()
        let items = try claim(5, to: "k", into: &r)
        #expect(r.next(now: now, stopAsked: true) == .withdrawAll)
        r.withdrew(Array(items[2...]))
        #expect(r.next(now: now, stopAsked: true) == .receive(until: nil), "two handed out: awaited, however long")
        _ = recorded(try slice(Array(items[..<2]), [Self.delivered, nil]), &r)
        #expect(r.notes.inFlight.isEmpty)
        #expect(r.next(now: now, stopAsked: true) == .finish)
    }

    // MARK: where the scan starts again

    @Test func aFreshScanAsksOnlyForTheStoresMark() {
        var r = run()
        #expect(r.claimStarts(token: 1, now: now, floors: false) == .ready)
        #expect(r.claimStarts(token: 1, now: now, floors: true) == .askFloor(since: nil))
        #expect(r.floorAnswered(ChangeFloor(mark: 7, floor: .all), since: nil) == .ready)
        #expect(r.claimStarts(token: 1, now: now, floors: true) == .ready, "the mark is kept")
    }

    /// A scan that has walked to `at(9)` with the store's mark 7 and token 1.
    func walked(floors: Bool = true) -> FlushRun {
        var r = run()
        _ = r.claimStarts(token: 1, now: now, floors: floors)
        if floors { _ = r.floorAnswered(ChangeFloor(mark: 7, floor: .all), since: nil) }
        r.scan.advance(to: position(9))
        return r
    }

    @Test func anotherProcessesCommitSendsTheScanBackToItsFloor() {
        var r = walked()
        #expect(r.claimStarts(token: 2, now: now, floors: true) == .askFloor(since: 7))
        #expect(r.floorAnswered(ChangeFloor(mark: 8, floor: .from(position(3))), since: 7) == .ready)
        #expect(r.scan.position == ClaimPosition(createdAt: position(3).createdAt, id: ""), "just before what it wrote")
        #expect(r.claimStarts(token: 3, now: now, floors: true) == .askFloor(since: 8), "asked from the new mark next time")
    }

    @Test func aCommitElsewhereThatWroteNothingLeavesTheScan() {
        var r = walked()
        _ = r.claimStarts(token: 2, now: now, floors: true)
        _ = r.floorAnswered(ChangeFloor(mark: 8, floor: .none), since: 7)
        #expect(r.scan.position == position(9))
    }

    @Test func aCommitElsewhereThatMayHaveChangedAnythingStartsFromTheFirst() {
        var r = walked()
        _ = r.claimStarts(token: 2, now: now, floors: true)
        _ = r.floorAnswered(ChangeFloor(mark: 8, floor: .all), since: 7)
        #expect(r.scan.position == nil)
    }

    @Test func withoutFloorsACommitElsewhereStartsFromTheFirst() {
        var r = walked(floors: false)
        #expect(r.claimStarts(token: 2, now: now, floors: false) == .ready)
        #expect(r.scan.position == nil)
    }

    @Test func theSameTokenGoesOnWhereTheScanStopped() {
        var r = walked()
        #expect(r.claimStarts(token: 1, now: now, floors: true) == .ready)
        #expect(r.scan.position == position(9))
    }

    @Test func aMessageBecomingDueStartsTheScanFromTheFirst() {
        var r = walked()
        r.becomesDue(now.adding(.seconds(5)))
        r.becomesDue(now.adding(.seconds(9)))
        #expect(r.scan.nextDue == now.adding(.seconds(5)), "the earliest")
        #expect(r.claimStarts(token: 1, now: now, floors: true) == .ready)
        #expect(r.scan.position == position(9), "not yet")
        #expect(r.claimStarts(token: 1, now: now.adding(.seconds(5)), floors: true) == .askFloor(since: nil))
        #expect(r.scan.position == nil, "its time came")
    }

    @Test func aScanReadToTheEndFindsNothingUnlessLessonsWait() throws {
        var r = walked()
        r.scan.readToEnd()
        #expect(r.claimFindsNothing(10))
        #expect(!r.claimFindsNothing(0), "a claim of nothing stores lessons")
        _ = recorded(try slice(try claim(1, to: "k", into: &r), [Self.failure]), &r)
        #expect(!r.claimFindsNothing(10), "lessons to store")
    }

    @Test func theStoreBackAfterAnOutageRewindsAndNamesWhatIsInFlight() throws {
        var r = walked()
        let items = try claim(2, to: "k", into: &r)
        let own = r.storeCameBack()
        #expect(own == Set(items.map(\.record.message.id)), "the run's own are not orphans")
        #expect(r.scan.position == nil, "orphans put back are queued behind the scan")
        #expect(r.pending == 2, "what is in flight stays so")
    }
}

extension FlushRunOutcomeTests {
    @Test func aScanIsLeftForTheNextRunOnlyByARunThatCanVouchForIt() throws {
        var r = walked()
        #expect(r.hintMark(endedEarly: false) == 7, "the mark of the scan's last look")
        #expect(r.hintMark(endedEarly: true) == nil, "stopped or misconfigured")
        let items = try claim(1, to: "k", into: &r)
        r.scan.hold("k", .busy, from: position(3), own: true)
        _ = recorded(try slice(items, [Self.delivered]), &r)
        #expect(r.hintMark(endedEarly: false) == nil, "its own outcome freed a hold not yet released")
        #expect(!r.hasLessons)
        _ = recorded(try slice(try claim(1, to: "j", from: 1, into: &r), [Self.failure]), &r)
        #expect(r.hasLessons, "a failure's lesson waits for a claim of nothing")
    }
}
