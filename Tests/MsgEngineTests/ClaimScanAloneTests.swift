import MsgEngine
import MsgKit
import Testing

/// The claim scan alone (#52): holds, outcomes and other processes' commits in,
/// where the next claim starts and what stays held out; no store, no thread, no
/// `Flusher`.
@Suite struct ClaimScanAloneTests {
    static let t0 = Timestamp(milliseconds: 1_800_000_000_000)

    /// The message created `n` ms after t0.
    func at(_ n: Int64) -> ClaimPosition { ClaimPosition(createdAt: Timestamp(milliseconds: Self.t0.milliseconds + n), id: "m\(n)") }
    /// Where a claim starts that goes back to just before the message at `n`: the
    /// first position of its millisecond.
    func before(_ n: Int64) -> ClaimPosition { ClaimPosition(createdAt: at(n).createdAt, id: "") }

    @Test func aDestinationsMessagesAreCountedOnceHoweverOftenTheScanPassesThem() {
        var scan = ClaimScan()
        #expect(scan.isFresh)
        scan.hold("a", .busy, from: at(1))
        scan.hold("a", .busy, from: at(3))
        scan.advance(to: at(5))
        // Read again after going back: not counted again.
        scan.hold("a", .busy, from: at(3))
        #expect(scan.holds.held["a"]?.count == 2)
        #expect(scan.holds.held["a"]?.why == .busy && scan.holds.skippable.contains("a"))
        #expect(scan.position == at(5) && !scan.isFresh)
        // A probe is held but not skipped: its message must be read to be sent.
        scan.hold("p", .probing, from: at(4))
        #expect(!scan.holds.skippable.contains("p"))
    }

    /// The run's own outcome frees its destination: the next claim goes back to the
    /// first message that destination left, and only its hold ends.
    @Test func anOwnOutcomeGoesBackToWhatItsDestinationLeftAndNoFurther() {
        var scan = ClaimScan()
        scan.hold("a", .busy, from: at(4), own: true)
        scan.hold("b", .busy, from: at(2))
        scan.advance(to: at(9))
        scan.free("a")
        #expect(scan.holds.freed == ["a"])
        let released = scan.releaseFreed()
        #expect(released)
        #expect(scan.position == before(4), "back to the first message a left, not to the first of all")
        #expect(Set(scan.holds.held.keys) == ["b"] && scan.holds.freed.isEmpty)
        // Nothing freed: nothing moves.
        let releasedAgain = scan.releaseFreed()
        #expect(releasedAgain && scan.position == before(4))
    }

    /// A hold that ends by its time (a pause, an open breaker) is not ended by an
    /// outcome; its time ends it, and the scan starts from the first message then.
    @Test func aHoldWithATimeEndsByItsTimeNotByAnOutcome() {
        var scan = ClaimScan()
        let until = Timestamp(milliseconds: Self.t0.milliseconds + 5000)
        scan.hold("c", .paused(until: until), from: at(1))
        scan.advance(to: at(3))
        scan.free("c")
        #expect(scan.holds.freed.isEmpty)
        #expect(scan.holds.wake == until && scan.holds.holdsEnd == until)
        scan.token = 7
        #expect(scan.restart(token: 7, at: Self.t0) == .goOn)
        #expect(scan.restart(token: 7, at: until) == .fromFirst)
    }

    /// A message of a held destination put back behind the scan leaves no first
    /// message on record: ending that hold must start from the first message.
    @Test func aMessagePutBehindTheScanSendsItBackToTheFirstMessage() {
        var scan = ClaimScan()
        scan.hold("k", .busy, from: at(3), own: true)
        scan.advance(to: at(6))
        scan.putBehind("k")
        scan.free("k")
        let released = scan.releaseFreed()
        #expect(!released, "the caller starts from the first message")
    }

    /// Another process's commit sends the scan back only to where it changed the
    /// queue: holds by state stand, the run's own share stays held, a destination
    /// busy elsewhere is looked at again, and one held by another claim's lock goes
    /// back to the first message it left, which may lie before the commit.
    @Test func anotherProcessesCommitGoesBackOnlyAsFarAsItChangedTheQueue() {
        var scan = ClaimScan()
        scan.hold("suspended", .suspended(until: nil), from: at(1))
        scan.hold("elsewhere", .busy, from: at(2))
        scan.hold("mine", .busy, from: at(3), own: true)
        scan.advance(to: at(9))
        let wentBack = scan.rewind(before: at(6))
        #expect(wentBack)
        #expect(Set(scan.holds.held.keys) == ["suspended", "mine"])
        #expect(scan.position == before(6))

        var locked = ClaimScan()
        locked.hold("l", .busy, from: at(2), locked: true)
        locked.advance(to: at(9))
        let lockedWentBack = locked.rewind(before: at(6))
        #expect(lockedWentBack)
        #expect(locked.position == before(2), "back to what the locked destination left")

        var unknown = ClaimScan()
        unknown.hold("u", .busy, locked: true)
        unknown.advance(to: at(9))
        let unknownWentBack = unknown.rewind(before: at(6))
        #expect(!unknownWentBack, "no first message on record: from the first")
    }

    @Test func whenTheScanStartsAgain() {
        var scan = ClaimScan()
        #expect(scan.restart(token: nil, at: Self.t0) == .goOn, "at the first message already")
        scan.advance(to: at(1))
        scan.token = 3
        #expect(scan.restart(token: 3, at: Self.t0) == .goOn)
        #expect(scan.restart(token: 4, at: Self.t0) == .changedElsewhere)
        #expect(scan.restart(token: nil, at: Self.t0) == .changedElsewhere, "a store that cannot tell")
        scan.nextDue = Timestamp(milliseconds: Self.t0.milliseconds + 10)
        #expect(scan.restart(token: 3, at: scan.nextDue!) == .fromFirst)
        // A claim that read to the end goes on from there only until something changes.
        scan.rewind()
        scan.readToEnd()
        scan.token = 3
        #expect(scan.restart(token: 3, at: Self.t0) == .goOn && scan.exhausted)
        #expect(scan.restart(token: 5, at: Self.t0) == .changedElsewhere)
        let wentBack = scan.rewind(before: at(0))
        #expect(wentBack && !scan.exhausted)
    }
}
