import MsgKit

/// A transport to a fresh destination, as ``TransportConformance`` uses it.
public struct TransportUnderTest {
    /// The transport.
    public var transport: any Transport
    /// How many times each id reached the destination, as the destination sees it.
    public var deliveries: () throws -> [String: Int]
    /// Another transport to the same destination, as a new process would open it
    /// after a crash.
    public var reopen: () throws -> any Transport

    public init(transport: any Transport, deliveries: @escaping () throws -> [String: Int], reopen: @escaping () throws -> any Transport) {
        self.transport = transport
        self.deliveries = deliveries
        self.reopen = reopen
    }
}

/// How to make a transport fail on purpose, for the error-class scenarios.
public struct TransportFaults {
    /// A transport whose deliveries fail with the delivery class `code`, or nil for a
    /// class this transport cannot be made to show.
    public var failing: (MsgError.Code) throws -> (any Transport)?
    /// A transport whose destination takes `latency` to accept each message.
    public var slow: (MsgDuration) throws -> any Transport

    public init(failing: @escaping (MsgError.Code) throws -> (any Transport)?, slow: @escaping (MsgDuration) throws -> any Transport) {
        self.failing = failing
        self.slow = slow
    }
}

/// The behaviour every ``Transport`` plugin must show (docs/DESIGN.md 6).
public enum TransportConformance {
    /// The delivery classes, each checked when `faults` can produce it.
    public static let classes: [MsgError.Code] = [.timeout, .unreachable, .rateLimited, .remote, .rejected]

    /// Runs every scenario; the error-class and deadline ones only with `faults`.
    /// - Throws: ``ConformanceFailures``.
    public static func run(faults: TransportFaults? = nil, open: () throws -> TransportUnderTest) throws {
        var runner = ScenarioRunner(suite: "TransportConformance")

        runner.scenario("delivers in order, one outcome per message") { c in
            let t = try open()
            let ms = (0..<5).map { Fixtures.message($0) }
            let outcomes = t.transport.deliver(ms.map { EncodedMessage($0) }, deadline: .seconds(3))
            c.expectEqual(outcomes.count, 5, "outcomes")
            for (i, o) in outcomes.enumerated() {
                if case .failed(let e, _) = o { c.expect(false, "message \(i) failed: \(e.message)") }
            }
            let seen = try t.deliveries()
            c.expectEqual(ms.map { seen[$0.id] ?? 0 }, [1, 1, 1, 1, 1], "deliveries per id")
        }

        runner.scenario("redelivering an id is not a second delivery") { c in
            let t = try open()
            let m = Fixtures.message(1)
            _ = t.transport.deliver([EncodedMessage(m)], deadline: .seconds(3))
            let again = t.transport.deliver([EncodedMessage(m)], deadline: .seconds(3))
            c.expectEqual(again, [.delivered(confirmed: false)], "outcome of the second delivery")
            c.expectEqual(try t.deliveries()[m.id], 1, "deliveries")
        }

        runner.scenario("lookup tells delivered ids from others") { c in
            let t = try open()
            let m = Fixtures.message(1)
            _ = t.transport.deliver([EncodedMessage(m)], deadline: .seconds(3))
            if let known = try t.transport.lookup(m.id) {
                c.expect(known, "lookup of a delivered id said false")
                c.expectEqual(try t.transport.lookup(Fixtures.message(2).id), false, "lookup of an unknown id")
            }
        }

        runner.scenario("after a crash between delivery and its acknowledgement") { c in
            // The host delivered, then died before recording it: a new process asks, and
            // may send again; either way the destination has the message once.
            let t = try open()
            let ms = (10..<13).map { Fixtures.message($0) }
            _ = t.transport.deliver(ms.map { EncodedMessage($0) }, deadline: .seconds(3))
            let after = try t.reopen()
            for (m, answer) in zip(ms, try after.lookup(ms.map(\.id))) where answer != nil {
                c.expect(answer == true, "lookup after the crash said \(m.id) was not delivered")
            }
            c.expectEqual(after.deliver(ms.map { EncodedMessage($0) }, deadline: .seconds(3)), Array(repeating: .delivered(confirmed: false), count: 3), "resending after the crash")
            let seen = try t.deliveries()
            c.expectEqual(ms.map { seen[$0.id] ?? 0 }, [1, 1, 1], "deliveries per id")
        }

        if let faults {
            for code in classes {
                runner.scenario("reports a \(code.name) failure as \(code.name)") { c in
                    guard let transport = try faults.failing(code) else { return }
                    let outcome = transport.deliver([EncodedMessage(Fixtures.message(20))], deadline: MsgDuration(milliseconds: 500))
                    guard case .failed(let error, let retryAfter)? = outcome.first, outcome.count == 1 else {
                        c.expect(false, "expected one \(code.name) failure, got \(outcome)")
                        return
                    }
                    c.expectEqual(error.code, code, "error class")
                    if code == .rateLimited { c.expect(retryAfter != nil, "rate_limited without a retry-after") }
                }
            }

            runner.scenario("honours the deadline") { c in
                let transport = try faults.slow(.seconds(10))
                let start = Timestamp.now()
                let outcome = transport.deliver([EncodedMessage(Fixtures.message(30))], deadline: MsgDuration(milliseconds: 200))
                let took = Timestamp.now().milliseconds - start.milliseconds
                guard case .failed(let error, _)? = outcome.first else {
                    c.expect(false, "a destination slower than the deadline: expected timeout, got \(outcome)")
                    return
                }
                c.expectEqual(error.code, .timeout, "error class")
                // Far below the destination's 10 s: the transport gave up at its deadline.
                c.expect(took < 5000, "the 200ms deadline took \(took)ms to report")
            }
        }

        if !runner.failures.isEmpty { throw ConformanceFailures(failures: runner.failures) }
    }
}
