#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport
import Synchronization

/// Everything msg says on standard error: one line each, starting `msg: `.
/// Standard output carries records only.
public enum Diagnostics {
    /// Writes `msg: <text>` and a newline to standard error.
    public static func say(_ text: String) {
        let line = Array("msg: \(text)\n".utf8)
        _ = try? SystemCalls.writeAll(2, line, code: .storeIO, what: "standard error")
    }

    /// Reports a bad input line: `msg: line N: <problem>`.
    public static func badLine(_ number: Int, _ error: MsgError) {
        say("line \(number): \(error.message)")
    }

    /// Whether standard error is a terminal (progress is shown only then).
    public static var stderrIsTerminal: Bool { isatty(2) == 1 }
    /// Whether standard output is a terminal.
    public static var stdoutIsTerminal: Bool { isatty(1) == 1 }
}

/// A count shown on standard error while a long operation runs, when it is a terminal.
public final class Progress: Sendable {
    private struct State {
        var lastShown: Int64 = 0
        var shown = false
        var total: Int?
    }

    private let label: String
    private let enabled: Bool
    private let state: Mutex<State>

    /// How many there are in all, when known: shown as "N of TOTAL".
    public var total: Int? {
        get { state.withLock { $0.total } }
        set { state.withLock { $0.total = newValue } }
    }

    /// A progress line "msg: <label> N" shown at most five times a second; by
    /// default only when standard error is a terminal that records on standard
    /// output do not share. Any thread may update it.
    public init(_ label: String, total: Int? = nil,
                enabled: Bool = Diagnostics.stderrIsTerminal && !Diagnostics.stdoutIsTerminal) {
        self.label = label
        self.enabled = enabled
        state = Mutex(State(total: total))
    }

    /// Whether it shows anything (standard error is a terminal).
    public var isShown: Bool { enabled }

    /// Shows `count` if enough time has passed.
    public func update(_ count: Int) {
        guard enabled else { return }
        let now = Monotonic.milliseconds()
        let total: Int?? = state.withLock { s in
            guard now - s.lastShown >= 200 else { return nil }
            s.lastShown = now
            s.shown = true
            return .some(s.total)
        }
        guard let total else { return }
        let text = Array("\rmsg: \(label) \(count)\(total.map { " of \($0)" } ?? "")".utf8)
        _ = try? SystemCalls.writeAll(2, text, code: .storeIO, what: "standard error")
    }

    /// Clears the progress line.
    public func finish() {
        guard state.withLock({ $0.shown }) else { return }
        _ = try? SystemCalls.writeAll(2, Array("\r\u{1B}[K".utf8), code: .storeIO, what: "standard error")
    }
}
