#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// Where one run of a command reads and speaks: its input, the output records go
/// to, what it says to the user (``Reporter``, standard error for `msg`), and the
/// facts about them that change what it prints (which are terminals, how wide).
///
/// The command line makes one per run (for `msg`, the process's descriptors; for
/// each line of `msg shell`, the shell's) and hands it to the engine, which reads
/// and writes through nothing else (docs/DESIGN.md 5): a test gives the engine a
/// console of pipes and a reporter that keeps lines.
public struct Console: Sendable {
    /// The descriptor records, ids and bodies are read from.
    public var input: Int32
    /// The descriptor records and tables are written to.
    public var output: Int32
    /// The descriptor a progress line is drawn on (the reporter's, for `msg`).
    public var error: Int32
    /// Where diagnostics go, one line each.
    public var reporter: Reporter
    public var inputIsTerminal: Bool
    public var outputIsTerminal: Bool
    public var errorIsTerminal: Bool
    /// The width of the terminal records go to, in cells; nil when it is not one
    /// (and `COLUMNS` says nothing).
    public var width: Int?

    public init(input: Int32, output: Int32, error: Int32, reporter: Reporter, inputIsTerminal: Bool = false,
                outputIsTerminal: Bool = false, errorIsTerminal: Bool = false, width: Int? = nil) {
        self.input = input
        self.output = output
        self.error = error
        self.reporter = reporter
        self.inputIsTerminal = inputIsTerminal
        self.outputIsTerminal = outputIsTerminal
        self.errorIsTerminal = errorIsTerminal
        self.width = width
    }

    /// This process's descriptors (`input`, 1, 2), as they are now.
    public static func process(input: Int32 = 0, reporter: Reporter, columns: String? = SystemCalls.environment("COLUMNS")) -> Console {
        var size = winsize()
        var width: Int?
        if isatty(1) == 1, ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 {
            width = Int(size.ws_col)
        } else if let n = columns.flatMap({ Int($0) }), n > 0 {
            width = n
        }
        return Console(input: input, output: 1, error: 2, reporter: reporter, inputIsTerminal: isatty(input) == 1,
                       outputIsTerminal: isatty(1) == 1, errorIsTerminal: isatty(2) == 1, width: width)
    }

    /// Says one line to the user.
    public func say(_ line: String) { reporter.say(line) }

    /// A buffered output to ``output``.
    public func buffer() -> ByteOutput {
        ByteOutput(fd: output, name: output == 1 ? "standard output" : "file descriptor \(output)")
    }

    /// An NDJSON writer to ``output``.
    public func writer(flushEveryLine: Bool = true) -> NDJSONWriter {
        NDJSONWriter(output: buffer(), flushEveryLine: flushEveryLine)
    }

    /// The console of a command that prints a record for each message it changes
    /// (`flush`, `retry`, `recover`): into a pipe or a file, this one; on a terminal,
    /// one whose records go nowhere, so that a person reads the progress line and
    /// the summary on stderr instead of raw JSON (as `queue ls` chooses a table).
    public var forRecordsOfARun: Console {
        guard outputIsTerminal else { return self }
        var quiet = self
        quiet.output = Self.discard
        quiet.outputIsTerminal = false
        return quiet
    }

    /// /dev/null, open for writing for the life of the process.
    private static let discard: Int32 = open("/dev/null", O_WRONLY | O_CLOEXEC)

    /// `table` on a terminal, `ndjson` otherwise: what a listing prints without `--format`.
    public var format: OutputFormat { outputIsTerminal ? .table : .ndjson }

    /// A progress line `<label> N [of TOTAL]` on ``error``, shown only when it is a
    /// terminal that records on ``output`` do not share (or when `shown` says).
    public func progress(_ label: String, total: Int? = nil, shown: Bool? = nil) -> Progress {
        Progress(label, total: total, fd: error, enabled: shown ?? (errorIsTerminal && !outputIsTerminal))
    }
}
