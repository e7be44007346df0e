import MsgKit

/// A conformance scenario that failed: which suite, which scenario, and what was seen.
public struct ConformanceFailure: Error, Sendable, CustomStringConvertible {
    /// The suite (`StoreConformance`).
    public let suite: String
    /// The scenario (`fifo order`).
    public let scenario: String
    /// What was expected and what happened.
    public let detail: String

    public var description: String { "\(suite) / \(scenario): \(detail)" }
}

/// Runs one scenario, turning a wrong result or an unexpected error into a ``ConformanceFailure``.
struct ScenarioRunner {
    let suite: String
    var failures: [ConformanceFailure] = []

    mutating func scenario(_ name: String, _ body: (inout Checker) throws -> Void) {
        var checker = Checker(suite: suite, scenario: name)
        do {
            try body(&checker)
        } catch let failure as ConformanceFailure {
            checker.failures.append(failure)
        } catch {
            checker.failures.append(ConformanceFailure(suite: suite, scenario: name, detail: "unexpected error: \(error)"))
        }
        failures += checker.failures
    }
}

/// Collects the failed expectations of one scenario.
struct Checker {
    let suite: String
    let scenario: String
    var failures: [ConformanceFailure] = []

    mutating func expect(_ condition: Bool, _ detail: @autoclosure () -> String) {
        if !condition { failures.append(ConformanceFailure(suite: suite, scenario: scenario, detail: detail())) }
    }

    mutating func expectEqual<T: Equatable>(_ a: T, _ b: T, _ what: String) {
        expect(a == b, "\(what): expected \(b), got \(a)")
    }

    func fail(_ detail: String) -> ConformanceFailure {
        ConformanceFailure(suite: suite, scenario: scenario, detail: detail)
    }
}

/// Thrown when one or more scenarios failed; lists them all.
public struct ConformanceFailures: Error, Sendable, CustomStringConvertible {
    /// Every failed expectation.
    public let failures: [ConformanceFailure]
    public var description: String { failures.map(\.description).joined(separator: "\n") }
}
