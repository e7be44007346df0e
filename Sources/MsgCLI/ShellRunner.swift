#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgEngine
import MsgKit
import MsgSupport

/// Runs shell lines in this process, each as its own ``Invocation``: the shell's
/// settings in place of the environment's.
struct ShellRunner {
    /// The invocation every line runs with.
    var invocation: Invocation

    /// What a line asks for.
    enum Result: Equatable {
        case status(Int32)
        case exit(Int32)
    }

    /// Runs one line. Standard input is left as it is.
    func run(_ line: String) -> Result {
        var words: [String]
        do { words = try ShellWords.split(line) } catch {
            Diagnostics.say(error.message)
            return .status(error.code.exitCode)
        }
        if words.first == "msg" { words.removeFirst() }
        switch words.first {
        case nil: return .status(0)
        case "exit"?, "quit"?:
            return .exit(words.count > 1 ? Int32(words[1]) ?? 64 : 0)
        case "help"? where words.count == 1:
            let status = MsgMain.run(arguments: ["--help"])
            let tip = "In the shell: any command above without 'msg'; help COMMAND; exit (or Ctrl-D). TAB completes.\n"
            _ = try? SystemCalls.writeAll(1, Array(tip.utf8), code: .storeIO, what: "standard output")
            return .status(status)
        case "help"?:
            return .status(MsgMain.run(arguments: Array(words.dropFirst()) + ["--help"]))
        case "shell"?:
            Diagnostics.say("already in the shell")
            return .status(64)
        default:
            let status = Invocation.$current.withValue(invocation) { MsgMain.run(arguments: words) }
            fflush(nil)
            return .status(status)
        }
    }

    /// Runs standard input as a script, each command with an empty input of its own
    /// (a command must not read the script). Stops at the first failing line.
    /// - Returns: that line's status, or 0.
    func runScript() throws(MsgError) -> Int32 {
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard null >= 0 else { throw MsgError(.storeIO, "cannot open /dev/null for the script's commands") }
        defer { close(null) }
        var lineRunner = self
        lineRunner.invocation.input = null
        var reader = NDJSONReader(fd: 0)
        while let batch = try reader.nextBatch() {
            for line in batch {
                guard let text = line.text else {
                    Diagnostics.say("script line \(line.number) is not valid UTF-8 or too long")
                    return 65
                }
                switch lineRunner.run(text) {
                case .exit(let status): return status
                case .status(0): continue
                case .status(let status):
                    Diagnostics.say("script line \(line.number) failed with status \(status): \(text)")
                    return status
                }
            }
        }
        return 0
    }
}
