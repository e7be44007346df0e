import MsgKit
import Synchronization

/// Where an engine component says what the user should know: one line each, which
/// the command line writes to standard error as `msg: <line>` (docs/DESIGN.md 5).
///
/// Injected, as swift-log injects its handler: a component is given a reporter
/// rather than writing to a descriptor itself, so a test reads what it said and
/// `msg shell` decides where its lines go.
public struct Reporter: Sendable {
    private let emit: @Sendable (String) -> Void
    private let repeats = RepeatedLines()

    /// A reporter that hands each line (without `msg: ` and newline) to `emit`.
    public init(_ emit: @escaping @Sendable (String) -> Void) {
        self.emit = emit
    }

    /// Says one line.
    public func say(_ text: String) { emit(text) }

    /// Reports a bad input line: `line N: <problem>`. After ``RepeatedLines/shown``
    /// lines with one problem, the next are counted, not said (``finish()``).
    public func badLine(_ number: Int, _ error: MsgError) {
        if repeats.admit(error.message, line: number) { say("line \(number): \(error.message)") }
    }

    /// Says how many bad lines were counted and not said, a line for each problem;
    /// called when a command ends.
    public func finish() {
        for (problem, more, last) in repeats.drain() {
            say("\(more) more line\(more == 1 ? "" : "s") had the same problem, the last of them line \(last): \(problem)")
        }
    }
}

/// The bad lines a reporter said and counted, by problem: a bulk input with one
/// mistake says it ten times and then how many more, not a thousand times.
final class RepeatedLines: Sendable {
    /// The lines said for one problem before the rest are counted.
    static let shown = 10

    private struct Seen {
        var count = 0
        var last = 0
    }

    private let seen = Mutex<[String: Seen]>([:])
    /// The problems in the order they were first met.
    private let order = Mutex<[String]>([])

    /// Whether the line `line` with `problem` is to be said.
    func admit(_ problem: String, line: Int) -> Bool {
        let (count, first) = seen.withLock { (all) -> (Int, Bool) in
            var s = all[problem] ?? Seen()
            s.count += 1
            s.last = line
            all[problem] = s
            return (s.count, s.count == Self.shown + 1)
        }
        if first { order.withLock { $0.append(problem) } }
        return count <= Self.shown
    }

    /// The problems counted past ``shown``, with how many and the last line; forgets all.
    func drain() -> [(String, Int, Int)] {
        let all = seen.withLock { (all) -> [String: Seen] in
            defer { all = [:] }
            return all
        }
        let problems = order.withLock { (o) -> [String] in
            defer { o = [] }
            return o
        }
        return problems.compactMap { p in all[p].map { (p, $0.count - Self.shown, $0.last) } }
    }
}
