#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

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
public final class Progress {
    private let label: String
    private let enabled: Bool
    private var lastShown: Int64 = 0
    private var shown = false

    /// A progress line "msg: <label> N" shown at most five times a second.
    public init(_ label: String, enabled: Bool = Diagnostics.stderrIsTerminal) {
        self.label = label
        self.enabled = enabled
    }

    /// Shows `count` if enough time has passed.
    public func update(_ count: Int) {
        guard enabled else { return }
        let now = Timestamp.now().milliseconds
        guard now - lastShown >= 200 else { return }
        lastShown = now
        shown = true
        let text = Array("\rmsg: \(label) \(count)".utf8)
        _ = try? SystemCalls.writeAll(2, text, code: .storeIO, what: "standard error")
    }

    /// Clears the progress line.
    public func finish() {
        guard shown else { return }
        _ = try? SystemCalls.writeAll(2, Array("\r\u{1B}[K".utf8), code: .storeIO, what: "standard error")
    }
}
