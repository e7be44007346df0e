#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import ArgumentParser
import MsgEngine
import MsgKit
import MsgSupport

/// The entry point: parses, runs, and maps every error to its exit status in
/// this one place (docs/DESIGN.md 8).
public enum MsgMain {
    /// Runs msg with the process's arguments and exits.
    public static func run() -> Never {
        openStandardDescriptors()
        let status = run(arguments: Array(CommandLine.arguments.dropFirst()))
        endAsSignalled(status)
        exit(status)
    }

    /// A command that SIGINT or SIGTERM stopped (status 128 + N, which msg uses for
    /// nothing else) has put everything in order; it now ends as if the signal had
    /// killed it, as Unix programs do after cleaning up, so that a shell loop around
    /// msg stops too. (Inside `msg shell` the status is only reported.)
    static func endAsSignalled(_ status: Int32) {
        guard status == 128 + SIGINT || status == 128 + SIGTERM else { return }
        let number = status - 128
        signal(number, SIG_DFL)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, number)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        raise(number)
    }

    /// Points standard input, output and error at /dev/null when they are closed (cron,
    /// CI, `<&-`). Otherwise the store's first open() would get descriptor 0 and be
    /// read as input, or get 1 and receive records.
    static func openStandardDescriptors() {
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 {
            let null = open("/dev/null", O_RDWR)
            if null >= 0 && null != fd {
                dup2(null, fd)
                close(null)
            }
        }
    }

    /// Runs msg with `arguments` and returns the exit status. Bad input lines
    /// counted and not said are summed up last (``Reporter/finish()``).
    public static func run(arguments: [String]) -> Int32 {
        defer { Invocation.current.reporter.finish() }
        return runCommand(arguments: arguments)
    }

    static func runCommand(arguments: [String]) -> Int32 {
        // `--version` does no work, so it does not pay for building the command tree.
        if arguments == ["--version"] || arguments == ["-V"] || arguments == ["version"] {
            let out = ByteOutput()
            out.write(MsgVersion.current + "\n")
            return (try? out.flush()) == nil ? 74 : 0
        }
        if let unknown = UnknownCommand.check(arguments) {
            Diagnostics.say(unknown.message)
            return unknown.code.exitCode
        }
        do {
            var command = try MsgCommand.parseAsRoot(arguments)
            try command.run()
            return 0
        } catch let error as MsgError {
            Diagnostics.say(error.message)
            return error.code.exitCode
        } catch let code as ExitCode {
            return code.rawValue
        } catch {
            let status = MsgCommand.exitCode(for: error).rawValue
            guard status != 0 else {
                // --help: the whole text, on standard output.
                let text = MsgCommand.fullMessage(for: error)
                if !text.isEmpty { _ = try? SystemCalls.writeAll(1, Array((text + "\n").utf8), code: .storeIO, what: "output") }
                return 0
            }
            // What was typed comes first: an option the command lacks, or a negative
            // value argument-parser took for an option.
            if let line = OptionCheck.unknown(arguments) {
                Diagnostics.say(line)
                return MsgError.Code.usage.exitCode
            }
            if let joined = OptionCheck.joiningNegativeValues(arguments) { return runCommand(arguments: joined) }
            // A command-line error is one line, as every error of msg (msg(1)); the
            // usage is in --help.
            Diagnostics.say(oneLine(MsgCommand.message(for: error), arguments: arguments))
            return status
        }
    }
}

/// argument-parser's message for a command-line error as one line: its first line,
/// with a pointer to the help of the command that was meant.
func oneLine(_ message: String, arguments: [String]) -> String {
    var line = message.split(separator: "\n").first.map(String.init) ?? "the command line is wrong"
    if line.hasPrefix("Error: ") { line.removeFirst("Error: ".count) }
    // The command words: as far as they name subcommands (ids and other arguments follow).
    let path = OptionCheck.command(arguments).1
    return line + " (see msg \(path.isEmpty ? "" : path.joined(separator: " ") + " ")--help)"
}

/// Turns a command's result status into the thrown `ExitCode` argument-parser expects.
func finish(_ status: Int32) throws {
    if status != 0 { throw ExitCode(status) }
}
