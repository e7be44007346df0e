import MsgKit

/// The behaviour every ``Transport`` plugin must show (DESIGN.md 6).
///
/// `open` makes a transport to a fresh destination; `deliveries` reports how many
/// times each id reached that destination, as the destination sees it.
public enum TransportConformance {
    /// Runs every scenario. - Throws: ``ConformanceFailures``.
    public static func run(open: () throws -> (transport: any Transport, deliveries: () throws -> [String: Int])) throws {
        var runner = ScenarioRunner(suite: "TransportConformance")

        runner.scenario("delivers in order, one outcome per message") { c in
            let (t, deliveries) = try open()
            let ms = (0..<5).map { Fixtures.message($0) }
            let outcomes = t.deliver(ms, deadline: .seconds(3))
            c.expectEqual(outcomes.count, 5, "outcomes")
            for (i, o) in outcomes.enumerated() {
                if case .failed(let e, _) = o { c.expect(false, "message \(i) failed: \(e.message)") }
            }
            let seen = try deliveries()
            c.expectEqual(ms.map { seen[$0.id] ?? 0 }, [1, 1, 1, 1, 1], "deliveries per id")
        }

        runner.scenario("redelivering an id is not a second delivery") { c in
            let (t, deliveries) = try open()
            let m = Fixtures.message(1)
            _ = t.deliver([m], deadline: .seconds(3))
            let again = t.deliver([m], deadline: .seconds(3))
            c.expectEqual(again, [.delivered(confirmed: false)], "outcome of the second delivery")
            c.expectEqual(try deliveries()[m.id], 1, "deliveries")
        }

        runner.scenario("lookup tells delivered ids from others") { c in
            let (t, _) = try open()
            let m = Fixtures.message(1)
            _ = t.deliver([m], deadline: .seconds(3))
            if let known = try t.lookup(m.id) {
                c.expect(known, "lookup of a delivered id said false")
                c.expectEqual(try t.lookup(Fixtures.message(2).id), false, "lookup of an unknown id")
            }
        }

        if !runner.failures.isEmpty { throw ConformanceFailures(failures: runner.failures) }
    }
}
