import MsgEngine
import MsgKit
import Testing

/// The planner alone (#52): a claim's candidates in, answers and holds out, with a
/// claim session that only says what a store would (records in flight elsewhere,
/// destination states); no store, no thread, no `Flusher`.
@Suite struct DestinationPlannerTests {
    static let now = Timestamp(milliseconds: 1_800_000_000_000)

    /// What a store's claim session tells the planner, and nothing it does.
    final class Session: ClaimSession {
        let flying: [InFlight]
        let stored: [String: String]
        init(inFlight: [InFlight] = [], states: [String: String] = [:]) { (flying, stored) = (inFlight, states) }
        func inFlight() throws(MsgError) -> [InFlight]? { flying }
        func record(_ id: String) throws(MsgError) -> EncodedMessage? { nil }
        func hasStates() throws(MsgError) -> Bool { !stored.isEmpty }
        func states(_ keys: Set<String>) throws(MsgError) -> [String: String] { stored.filter { keys.contains($0.key) } }
        func candidates(_ query: Query, after position: ClaimPosition?, skipping: Set<String>, limit: Int) throws(MsgError) -> [ClaimRow] { [] }
        func store(_ changes: [Change], states: [String: String?]) throws(MsgError) -> [Bool] { changes.map { _ in true } }
    }

    /// The queued message `n` to `to`, created `n` ms after the epoch of the test.
    func row(_ n: Int64, to: String, expiresAt: Timestamp? = nil) -> ClaimRow {
        let m = Message(id: "0190000\(n)-0000-7000-8000-000000000000", to: to, body: "m\(n)",
                        now: Timestamp(milliseconds: Self.now.milliseconds - 60_000 + n), expiresAt: expiresAt)
        return ClaimRow(record: EncodedMessage(m), status: .queued)
    }

    func planner(_ scan: ClaimScan, room: (most: Int, inFlight: [String: Int])? = nil, clock: @escaping () -> Timestamp = { Self.now }) throws -> DestinationPlanner {
        DestinationPlanner(DestinationPlanner.Setup(
            book: DestinationBook(rules: DeliveryRules()), clock: clock, leaseLength: .seconds(60),
            lessons: [], own: [], room: room, attempted: [], faults: try FaultPoints(environment: nil)), scan: scan)
    }

    /// What the answers took, by body; nil for a skip or a stop.
    func taken(_ answers: [ClaimAnswer]) -> [String?] {
        answers.map { if case .take(let r) = $0 { r.message.body } else { nil } }
    }

    @Test func aDestinationInFlightElsewhereIsHeldAndLeftOutOfTheNextRead() throws {
        let p = try planner(ClaimScan())
        let session = Session(inFlight: [InFlight(id: "elsewhere", to: "bob")])
        try p.begin(session)
        let answers = try p.consider([row(1, to: "bob"), row(2, to: "carol"), row(3, to: "bob")], in: session)
        #expect(taken(answers) == [nil, "m2", nil])
        #expect(p.scan.holds.held["bob"]?.why == .busy && p.scan.holds.held["bob"]?.count == 2)
        #expect(p.skipping.contains("bob") && !p.skipping.contains("carol"))
        #expect(answers.allSatisfy { if case .take(let r) = $0 { r.message.status == .sending } else { true } }, "what is taken goes out sending")
    }

    /// With a share per destination, what is beyond it waits for the scan to start
    /// again, held as the run's own: none of it goes ahead of what was taken.
    @Test func beyondItsShareADestinationIsHeldAsTheRunsOwn() throws {
        let p = try planner(ClaimScan(), room: (1, [:]))
        let session = Session()
        try p.begin(session)
        let answers = try p.consider([row(1, to: "bob"), row(2, to: "bob"), row(3, to: "carol")], in: session)
        #expect(taken(answers) == ["m1", nil, "m3"])
        #expect(p.scan.holds.held["bob"]?.why == .busy)
        // The run's own hold stands when another process's commit sends the scan back.
        var scan = p.scan
        let wentBack = scan.rewind(before: row(0, to: "x").position)
        #expect(wentBack && scan.holds.held["bob"]?.why == .busy)
    }

    /// An expired message is taken to be recorded dead, never to be sent; a
    /// suspended destination is held with its suspension, its messages left.
    @Test func expiredMessagesDieAndSuspendedDestinationsWait() throws {
        var suspended = DestinationState()
        suspended.suspension = .init(since: Self.now, until: nil, reason: "maintenance")
        let p = try planner(ClaimScan())
        let session = Session(states: ["dave": suspended.text])
        try p.begin(session)
        let answers = try p.consider([row(1, to: "bob", expiresAt: Self.now), row(2, to: "dave"), row(3, to: "erin")], in: session)
        guard case .take(let expired) = answers[0] else { Issue.record("the expired message was not taken: \(answers[0])"); return }
        #expect(expired.message.status == .dead && expired.message.lastError?.code == "expired")
        #expect(taken(answers).dropFirst() == [nil, "m3"])
        #expect(p.scan.holds.held["dave"]?.why == .suspended(until: nil))
        #expect(p.finish().isEmpty, "no destination's state changed")
    }
    /// A claim made again after the store was unreachable (``OutageRidingStore``
    /// makes it again with the same planner) starts afresh: the holds, findings and
    /// states of the attempt that failed are gone, and what it takes is leased from
    /// the time of the attempt that commits, not of the one that failed.
    @Test func anAttemptMadeAgainStartsAfreshAtItsOwnTime() throws {
        final class Clock { var now = DestinationPlannerTests.now }
        let clock = Clock()
        let p = try planner(ClaimScan(), clock: { clock.now })
        let busy = Session(inFlight: [InFlight(id: "elsewhere", to: "bob")])
        try p.begin(busy)
        #expect(taken(try p.consider([row(1, to: "bob"), row(2, to: "carol")], in: busy)) == [nil, "m2"])
        #expect(p.scan.holds.held["bob"]?.why == .busy && p.found.originals.count == 1)
        // The store failed before its commit; ten minutes later it answers, and bob's
        // message in flight elsewhere has had its outcome.
        clock.now = Timestamp(milliseconds: Self.now.milliseconds + 600_000)
        let free = Session()
        try p.begin(free)
        #expect(p.scan.holds.held.isEmpty && p.found.originals.isEmpty, "nothing of the attempt that failed")
        let answers = try p.consider([row(1, to: "bob"), row(2, to: "carol")], in: free)
        #expect(taken(answers) == ["m1", "m2"])
        let leases = answers.compactMap { if case .take(let r) = $0 { r.message.lease?.until } else { nil } }
        #expect(leases == [clock.now.adding(.seconds(60)), clock.now.adding(.seconds(60))], "leased from the attempt that commits")
        #expect(p.found.originals.count == 2)
    }
}
