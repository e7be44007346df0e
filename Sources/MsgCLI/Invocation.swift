#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgEngine
import MsgKit
import MsgSupport

/// What one run of a command reads and where it speaks: its standard input, its
/// reporter, and settings that take the place of the environment's.
///
/// A command is built by argument-parser, so it cannot be handed these; it reads
/// ``current``, which `msg` sets for the run: the process's own for `msg`, and for
/// each line of `msg shell` the shell's settings (and, in a script, an empty input,
/// so a command never reads the script). Nothing process-wide changes: no `setenv`,
/// no `dup2`. The engine is given what it needs from here, never reads it.
struct Invocation: Sendable {
    /// The descriptor a command reads records, ids and bodies from.
    var input: Int32 = 0
    /// Where engine components say what the user should know.
    var reporter: Reporter = .standardError
    /// Values that take the place of these environment variables.
    var environment: [String: String] = [:]

    /// The value of the environment variable `name` for this run.
    func variable(_ name: String) -> String? {
        environment[name] ?? SystemCalls.environment(name)
    }

    /// Whether the input is a terminal (then a command does not wait for it).
    var inputIsTerminal: Bool { isatty(input) == 1 }

    /// Whether the input is where a command's ids come from: a pipe, a socket or a
    /// file; not a terminal, /dev/null or a closed descriptor (docs/DESIGN.md 5).
    /// Such an input that names no message means none: never "all".
    var inputBringsIDs: Bool {
        var st = stat()
        guard fstat(input, &st) == 0 else { return false }
        let kind = st.st_mode & S_IFMT
        return kind == S_IFIFO || kind == S_IFREG || kind == S_IFSOCK
    }

    /// The console of this run: its input, standard output and the reporter.
    var console: Console { Console.process(input: input, reporter: reporter, columns: variable("COLUMNS")) }

    /// The invocation of the command running now.
    @TaskLocal static var current = Invocation()
}
