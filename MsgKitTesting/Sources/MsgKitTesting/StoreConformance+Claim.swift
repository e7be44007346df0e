import MsgKit

/// A planner for the conformance scenarios: takes messages whose recipient is not
/// in flight, up to what the request allows, and writes the states it is told to.
final class RecordingPlanner: ClaimPlanner {
    var calls: [String] = []
    var inFlight: [InFlight]?
    var seenStates: [String: String] = [:]
    let statesToWrite: [String: String?]
    let stopAfter: Int?
    let failOn: String?
    var skipping: Set<String>
    private var busyTo: Set<String> = []
    private var considered = 0

    init(writing states: [String: String?] = [:], stopAfter: Int? = nil, failOn: String? = nil, skipping: Set<String> = []) {
        statesToWrite = states
        self.stopAfter = stopAfter
        self.failOn = failOn
        self.skipping = skipping
    }

    func begin(_ session: any ClaimSession) throws(MsgError) {
        calls.append("begin")
        inFlight = try session.inFlight()
        busyTo = Set(inFlight?.map(\.to) ?? [])
    }

    func consider(_ rows: [ClaimRow], in session: any ClaimSession) throws(MsgError) -> [ClaimAnswer] {
        let keys = Set(rows.map(\.record.message.to))
        for (k, v) in try session.states(keys) { seenStates[k] = v }
        return try rows.map { (row) throws(MsgError) -> ClaimAnswer in
            let m = row.record.message
            calls.append("consider \(m.id)")
            considered += 1
            if m.id == failOn { throw MsgError(.badInput, "boom") }
            if let stopAfter, considered > stopAfter { return .stop }
            if busyTo.contains(m.to) || skipping.contains(m.to) { return .skip }
            var x = m
            try x.transition(to: .sending, event: "attempt", at: Fixtures.t0)
            return .take(EncodedMessage(updating: row.record, to: x))
        }
    }

    func finish() -> [String: String?] {
        calls.append("finish")
        return statesToWrite
    }
}

extension StoreConformance {
    /// The one claim (plugin ABI 6): ``Store/claimSession(_:)`` run by ``ClaimLoop``.
    static func claimScenarios(_ runner: inout ScenarioRunner, fresh: () throws -> (String, any Store),
                               open: (String) throws -> any Store) {
        let query = Query(statuses: [.queued])

        runner.scenario("a claim sees the records in flight, then candidates in FIFO order, and stores records and states in one commit") { c in
            let (url, store) = try fresh()
            var inFlight = Fixtures.message(0, to: "a", createdOffset: 0)
            try inFlight.transition(to: .sending, event: "attempt", at: Fixtures.t0)
            let queued = [("a", 1), ("b", 2), ("a", 3), ("c", 4)].map { Fixtures.message($0.1, to: $0.0, createdOffset: Int64($0.1)) }
            _ = try store.add([inFlight] + queued)
            let first = RecordingPlanner(writing: ["b": "{\"failures\":1}", "z": "zz"])
            let result = try store.claim(ClaimRequest(query: query, limit: 10), first)
            c.expectEqual(first.calls, ["begin"] + queued.map { "consider \($0.id)" } + ["finish"], "the order of calls")
            c.expectEqual(first.inFlight, [InFlight(id: inFlight.id, to: "a")], "the record in flight, on the first claim of a handle")
            c.expectEqual(result.taken.map(\.message.id), [queued[1].id, queued[3].id], "taken: those the planner took, in FIFO order")
            c.expectEqual(result.position, ClaimPosition(createdAt: queued[3].createdAt, id: queued[3].id), "the scan's position: the last read")
            c.expect(result.reachedEnd, "the scan reached the end")
            for r in result.taken {
                c.expectEqual(r, EncodedMessage(r.message), "the text returned is the record's canonical text")
                c.expectEqual(try store.get(r.message.id), r, "and the one stored")
            }
            c.expectEqual(try store.count(Query(statuses: [.sending])), 3, "stored sending")
            let later = try open(url)
            c.expectEqual(try later.destinationStates(nil), ["b": "{\"failures\":1}", "z": "zz"], "the states, seen by a store opened later")
            c.expectEqual(try later.destinationStates(["z", "q"]), ["z": "zz"], "states read per key")
            c.expect(try later.claimSession { (s) throws(MsgError) in try s.hasStates() }, "a store with states says so")
            let second = RecordingPlanner(writing: ["z": nil])
            _ = try later.claim(ClaimRequest(query: query, limit: 10), second)
            c.expectEqual(second.seenStates, [:], "states are read only for the candidates' keys")
            c.expectEqual(try later.destinationStates(nil), ["b": "{\"failures\":1}"], "a nil state is removed")
            c.expectEqual(Set(second.inFlight?.map(\.id) ?? []), Set([inFlight.id, queued[1].id, queued[3].id]),
                          "every record in flight is shown to a handle's first claim")
        }

        runner.scenario("a claim starts after a position, and reads no more than asked") { c in
            let (_, store) = try fresh()
            c.expect(try !store.claimSession { (s) throws(MsgError) in try s.hasStates() }, "a store without states says so")
            let all = (0..<10).map { Fixtures.message($0, to: "d\($0)", createdOffset: Int64($0)) }
            _ = try store.add(all)
            let after = RecordingPlanner()
            let resumed = try store.claim(ClaimRequest(query: query, limit: 3, after: ClaimPosition(createdAt: all[5].createdAt, id: all[5].id)), after)
            c.expectEqual(resumed.taken.map(\.message.id), all[6..<9].map(\.id), "strictly after the position, in FIFO order")
            c.expect(!resumed.reachedEnd, "stopped at the limit, not the end")
            let skipping = RecordingPlanner(skipping: ["d0", "d2"])
            let skipped = try store.claim(ClaimRequest(query: query, limit: 3, chunk: 2), skipping)
            c.expectEqual(skipped.taken.map(\.message.id), [all[1].id, all[3].id, all[4].id], "recipients to skip are never taken, in chunks")
            let stopping = RecordingPlanner(stopAfter: 1)
            let stopped = try store.claim(ClaimRequest(query: query, limit: 10), stopping)
            c.expectEqual(stopped.taken.count, 1, "taken until the planner said stop")
            c.expectEqual(stopped.position, ClaimPosition(createdAt: all[0].createdAt, id: all[0].id), "the stopping record is read again next time")
            let none = RecordingPlanner(writing: ["x": "y"])
            c.expectEqual(try store.claim(ClaimRequest(query: query, limit: 0), none).taken.count, 0, "limit 0 takes nothing")
            c.expectEqual(none.calls, ["begin", "finish"], "and reads no candidate")
            c.expectEqual(try store.destinationStates(nil), ["x": "y"], "and still stores the states")
            let failing = RecordingPlanner(writing: ["x": nil, "w": "v"], failOn: all[9].id)
            do {
                _ = try store.claim(ClaimRequest(query: query, limit: 10), failing)
                c.expect(false, "the planner's error was not thrown")
            } catch let e as MsgError {
                c.expectEqual(e.code, .badInput, "error code")
            }
            c.expectEqual(try store.count(Query(statuses: [.queued])), 3, "nothing of the failed claim stored")
            c.expectEqual(try store.destinationStates(nil), ["x": "y"], "no state of the failed claim stored")
        }

        runner.scenario("what another process puts in flight is seen by the next claim") { c in
            let (url, store) = try fresh()
            _ = try store.add((0..<4).map { Fixtures.message($0, to: "r\($0 % 2)", createdOffset: Int64($0)) })
            _ = try store.claim(ClaimRequest(query: query, limit: 0), RecordingPlanner())
            let other = try open(url)
            let taken = try other.claim(ClaimRequest(query: query, limit: 1), RecordingPlanner()).taken
            let next = RecordingPlanner()
            let result = try store.claim(ClaimRequest(query: query, limit: 10), next)
            c.expectEqual(next.inFlight, [InFlight(id: taken[0].message.id, to: "r0")], "the other process's record in flight")
            c.expectEqual(result.taken.map(\.message.to), ["r1", "r1"], "its destination waits")
            if let token = try store.changeToken() {
                _ = try other.update([Change(taken[0].message, expected: .sending)])
                c.expect(try store.changeToken() != token, "another process's commit changes the token")
            }
        }

        runner.scenario("the next due time of waiting records") { c in
            let (_, store) = try fresh()
            var soon = Fixtures.message(1)
            soon.notBefore = Fixtures.t0.adding(.seconds(30))
            var later = Fixtures.message(2)
            later.notBefore = Fixtures.t0.adding(.seconds(90))
            var failed = Fixtures.message(3)
            try failed.transition(to: .sending, event: "attempt", at: Fixtures.t0)
            try failed.transition(to: .failed, event: "failed", at: Fixtures.t0)
            failed.nextAttemptAt = Fixtures.t0.adding(.seconds(10))
            _ = try store.add([later, soon, failed, Fixtures.message(4)])
            c.expectEqual(try store.nextDue([.queued], after: Fixtures.t0), soon.notBefore, "the earliest queued one")
            c.expectEqual(try store.nextDue([.failed], after: Fixtures.t0), failed.nextAttemptAt, "per status")
            c.expectEqual(try store.nextDue([.queued], after: Fixtures.t0.adding(.seconds(60))), later.notBefore, "after a time")
            c.expectEqual(try store.nextDue([.queued], after: Fixtures.t0.adding(.seconds(100))), nil, "none left")
        }
    }
}
