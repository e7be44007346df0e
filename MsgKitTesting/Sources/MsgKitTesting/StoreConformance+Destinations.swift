import MsgKit

/// A planner for the conformance scenarios: takes messages whose recipient is not
/// in flight, up to `limit`, and writes the states it is told to.
final class RecordingPlanner: ClaimPlanner {
    var calls: [String] = []
    var seenStates: [String: String] = [:]
    var busyRecords: [Message] = []
    let statesToWrite: [String: String?]
    let stopAfter: Int?
    let failOn: String?
    private var busyTo: Set<String> = []
    private var considered = 0

    init(writing states: [String: String?] = [:], stopAfter: Int? = nil, failOn: String? = nil) {
        statesToWrite = states
        self.stopAfter = stopAfter
        self.failOn = failOn
    }

    func begin(states: [String: String]) throws(MsgError) {
        calls.append("begin")
        seenStates = states
    }

    func busy(id: String, to: String, record: () -> Message) {
        calls.append("busy \(id)")
        let m = record()
        busyRecords.append(m)
        if m.id != id || m.to != to { calls.append("busy mismatch \(id)") }
        busyTo.insert(to)
    }

    func consider(_ m: Message) throws(MsgError) -> ClaimAnswer {
        calls.append("consider \(m.id)")
        considered += 1
        if m.id == failOn { throw MsgError(.badInput, "boom") }
        if let stopAfter, considered > stopAfter { return .stop }
        if busyTo.contains(m.to) { return .skip }
        var x = m
        try x.transition(to: .sending, event: "attempt", at: Fixtures.t0)
        return .take(x)
    }

    func finish() -> [String: String?] {
        calls.append("finish")
        return statesToWrite
    }
}

extension StoreConformance {
    /// The per-destination claim (plugin ABI 5).
    static func destinationScenarios(_ runner: inout ScenarioRunner, fresh: () throws -> (String, any Store),
                                      open: (String) throws -> any Store) {
        let query = Query(statuses: [.queued])

        runner.scenario("a planned claim shows states, then the records in flight, then candidates in FIFO order, and stores both in one commit") { c in
            let (url, store) = try fresh()
            var inFlight = Fixtures.message(0, to: "a", createdOffset: 0)
            try inFlight.transition(to: .sending, event: "attempt", at: Fixtures.t0)
            let queued = [("a", 1), ("b", 2), ("a", 3), ("c", 4)].map { Fixtures.message($0.1, to: $0.0, createdOffset: Int64($0.1)) }
            _ = try store.add([inFlight] + queued)
            let first = RecordingPlanner(writing: ["b": "{\"failures\":1}", "z": "zz"])
            let taken = try store.claim(ClaimRequest(query: query, limit: 10, scanLimit: 100), first)
            c.expectEqual(first.calls, ["begin", "busy \(inFlight.id)"] + queued.map { "consider \($0.id)" } + ["finish"], "the order of calls")
            c.expectEqual(first.busyRecords, [inFlight], "the record in flight, whole when asked")
            c.expectEqual(taken.map(\.message.id), [queued[1].id, queued[3].id], "taken: those the planner took, in FIFO order")
            for r in taken { c.expectEqual(r, EncodedMessage(r.message), "the text returned is the record's canonical text") }
            c.expectEqual(try store.count(Query(statuses: [.sending])), 3, "stored sending")
            let later = try open(url)
            c.expectEqual(try later.destinationStates(), ["b": "{\"failures\":1}", "z": "zz"], "the states, seen by a store opened later")
            let second = RecordingPlanner(writing: ["z": nil])
            _ = try later.claim(ClaimRequest(query: query, limit: 10, scanLimit: 100), second)
            c.expectEqual(second.seenStates, ["b": "{\"failures\":1}", "z": "zz"], "the next claim begins with them")
            c.expectEqual(try later.destinationStates(), ["b": "{\"failures\":1}"], "a nil state is removed")
            c.expectEqual(second.calls.filter { $0.hasPrefix("busy ") }.count, 3, "every record in flight is shown")
        }

        runner.scenario("a planned claim reads no more than asked, and a throwing planner stores nothing") { c in
            let (_, store) = try fresh()
            _ = try store.add((0..<10).map { Fixtures.message($0, to: "d\($0)", createdOffset: Int64($0)) })
            let stopping = RecordingPlanner(stopAfter: 3)
            let stopped = try store.claim(ClaimRequest(query: query, limit: 10, scanLimit: 100), stopping)
            c.expectEqual(stopped.count, 3, "taken until the planner said stop")
            c.expectEqual(stopping.calls.filter { $0.hasPrefix("consider ") }.count, 4, "nothing read after stop")
            let scanning = RecordingPlanner()
            let scanned = try store.claim(ClaimRequest(query: query, limit: 10, scanLimit: 2), scanning)
            c.expectEqual(scanned.count, 2, "the scan limit")
            let limited = RecordingPlanner()
            c.expectEqual(try store.claim(ClaimRequest(query: query, limit: 1, scanLimit: 100), limited).count, 1, "the limit")
            let none = RecordingPlanner(writing: ["x": "y"])
            c.expectEqual(try store.claim(ClaimRequest(query: query, limit: 0, scanLimit: 100), none).count, 0, "limit 0 takes nothing")
            c.expectEqual(try store.destinationStates(), ["x": "y"], "and still stores the states")
            let failing = RecordingPlanner(writing: ["x": nil, "w": "v"], failOn: Fixtures.message(8).id)
            do {
                _ = try store.claim(ClaimRequest(query: query, limit: 10, scanLimit: 100), failing)
                c.expect(false, "the planner's error was not thrown")
            } catch let e as MsgError {
                c.expectEqual(e.code, .badInput, "error code")
            }
            c.expectEqual(try store.count(Query(statuses: [.queued])), 4, "nothing of the failed claim stored")
            c.expectEqual(try store.destinationStates(), ["x": "y"], "no state of the failed claim stored")
        }
    }
}
