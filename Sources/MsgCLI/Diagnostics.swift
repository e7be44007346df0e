#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgEngine
import MsgKit
import MsgSupport

/// Everything msg says on standard error: one line each, starting `msg: `.
/// Standard output carries records only.
enum Diagnostics {
    /// Writes `msg: <text>` and a newline to standard error.
    static func say(_ text: String) {
        let line = Array("msg: \(text)\n".utf8)
        _ = try? SystemCalls.writeAll(2, line, code: .storeIO, what: "standard error")
    }

    /// Reports a bad input line: `msg: line N: <problem>`.
    static func badLine(_ number: Int, _ error: MsgError) {
        say("line \(number): \(error.message)")
    }

    /// Whether standard error is a terminal (progress is shown only then).
    static var stderrIsTerminal: Bool { isatty(2) == 1 }
    /// Whether standard output is a terminal.
    static var stdoutIsTerminal: Bool { isatty(1) == 1 }
}


extension Reporter {
    /// Standard error, `msg: ` first: the command line's reporter.
    static let standardError = Reporter { Diagnostics.say($0) }
}
