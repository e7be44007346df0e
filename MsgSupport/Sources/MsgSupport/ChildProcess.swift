#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import CProcess

/// How a command ended.
public struct ChildEnd: Sendable, Equatable {
    public enum How: Sendable, Equatable {
        case exited(Int32)
        case signalled(Int32)
        /// Still running at its deadline: its process group was sent SIGTERM, then SIGKILL.
        case timedOut
        /// posix_spawn failed with this errno.
        case notStarted(Int32)
    }
    public var how: How
    /// The first line of what it wrote on standard error, if anything (nil too when
    /// its standard error was not captured).
    public var firstErrorLine: String?
}

/// One running command: its own process group, a pipe to its standard input, a
/// pipe from its standard error (or a descriptor of msg's it writes to instead),
/// and a pidfd that polls readable when it ends.
///
/// msg is the subreaper of what the commands start (``ProcessPool/reapOrphans()``).
/// The parent's ends of the pipes are non-blocking; ``ProcessPool`` polls them.
/// The process is reaped by ``finish()``, and only after a timed-out group got its
/// SIGKILL: until then the leader is a zombie, so its pid, which is the group's
/// id, cannot be given to another process.
final class ChildProcess {
    let pid: pid_t
    private(set) var pidfd: Int32
    private(set) var inputFD: Int32
    private(set) var errorFD: Int32
    private let input: [UInt8]
    private var written = 0
    private var errorText: [UInt8] = []
    let deadline: Int64
    private(set) var termSentAt: Int64?
    private var killed = false

    /// The most of standard error kept; the rest is read and dropped.
    static let errorTextLimit = 4096

    /// Starts `argv[0]` (looked up in PATH when it has no slash) with `environment`,
    /// to be fed `input`, ending by `deadline` (monotonic milliseconds); its standard
    /// error is read from a pipe, or is `errorOutput` when given (then not kept).
    /// - Returns: the running child, or the errno of what failed when it cannot start.
    static func start(argv: [String], environment: [String], input: [UInt8], errorOutput: Int32?, deadline: Int64) -> Result<ChildProcess, SpawnFailure> {
        var inPipe: [Int32] = [-1, -1]
        var errPipe: [Int32] = [-1, -1]
        guard msg_pipe(&inPipe) == 0 else { return .failure(SpawnFailure(errno: errno)) }
        if errorOutput == nil {
            guard msg_pipe(&errPipe) == 0 else {
                let e = errno
                close(inPipe[0]); close(inPipe[1])
                return .failure(SpawnFailure(errno: e))
            }
        }
        var pid: pid_t = 0
        let rc = withCStrings(argv) { cArgv in
            withCStrings(environment) { cEnv in
                msg_spawn(cArgv[0], cArgv, cEnv, inPipe[0], errorOutput ?? errPipe[1], &pid)
            }
        }
        close(inPipe[0])
        if errPipe[1] >= 0 { close(errPipe[1]) }
        guard rc == 0 else {
            close(inPipe[1])
            if errPipe[0] >= 0 { close(errPipe[0]) }
            return .failure(SpawnFailure(errno: rc))
        }
        let pidfd = msg_pidfd_open(pid)
        if pidfd < 0 {
            // Cannot watch it: end it at once rather than leave it unwatched.
            let e = errno
            kill(-pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            close(inPipe[1])
            if errPipe[0] >= 0 { close(errPipe[0]) }
            return .failure(SpawnFailure(errno: e))
        }
        _ = fcntl(inPipe[1], F_SETFL, fcntl(inPipe[1], F_GETFL) | O_NONBLOCK)
        if errPipe[0] >= 0 { _ = fcntl(errPipe[0], F_SETFL, fcntl(errPipe[0], F_GETFL) | O_NONBLOCK) }
        let child = ChildProcess(pid: pid, pidfd: pidfd, inputFD: inPipe[1], errorFD: errPipe[0], input: input, deadline: deadline)
        if input.isEmpty { child.closeInput() }
        return .success(child)
    }

    private init(pid: pid_t, pidfd: Int32, inputFD: Int32, errorFD: Int32, input: [UInt8], deadline: Int64) {
        self.pid = pid
        self.pidfd = pidfd
        self.inputFD = inputFD
        self.errorFD = errorFD
        self.input = input
        self.deadline = deadline
    }

    /// Writes what the pipe takes now; closes standard input when all is written, or
    /// when the command stopped reading (EPIPE: it does not want it, which is its right).
    func writeInput() {
        guard inputFD >= 0 else { return }
        while written < input.count {
            let n = input.withUnsafeBytes { write(inputFD, $0.baseAddress! + written, $0.count - written) }
            if n > 0 { written += n; continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && errno == EAGAIN { return }
            break  // EPIPE or another error: it will not read the rest
        }
        closeInput()
    }

    /// Reads what standard error holds now, keeping the first ``errorTextLimit`` bytes.
    func readError() {
        guard errorFD >= 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(errorFD, $0.baseAddress, $0.count) }
            if n > 0 {
                if errorText.count < Self.errorTextLimit {
                    errorText += buffer[0..<min(n, Self.errorTextLimit - errorText.count)]
                }
                continue
            }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && errno == EAGAIN { return }
            close(errorFD)  // end of file, or an error
            errorFD = -1
            return
        }
    }

    /// Past its deadline: SIGTERM to the whole group, then SIGKILL `grace` later.
    /// - Returns: when this needs to be called again (monotonic ms), or nil.
    func enforceDeadline(now: Int64, grace: Int64) -> Int64? {
        if let term = termSentAt {
            if !killed && now >= term + grace { killGroup() }
            return killed ? nil : term + grace
        }
        guard now >= deadline else { return deadline }
        termSentAt = now
        kill(-pid, SIGTERM)
        return now + grace
    }

    /// It has ended (its pidfd polled readable): SIGKILL what is left of a timed-out
    /// group, reap it, take the last of its standard error, close everything.
    func finish() -> ChildEnd {
        if termSentAt != nil { killGroup() }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        if termSentAt != nil {
            // What the group started was reparented to msg (the subreaper) when its
            // leader ended, and has had its SIGKILL: reap every one of them.
            var other: Int32 = 0
            while waitpid(-pid, &other, 0) > 0 || errno == EINTR {}
        }
        readError()
        closeInput()
        if errorFD >= 0 { close(errorFD); errorFD = -1 }
        close(pidfd)
        pidfd = -1
        let how: ChildEnd.How
        if termSentAt != nil {
            how = .timedOut
        } else if status & 0x7f == 0 {
            how = .exited((status >> 8) & 0xff)
        } else {
            how = .signalled(status & 0x7f)
        }
        return ChildEnd(how: how, firstErrorLine: Self.firstLine(errorText))
    }

    private func killGroup() {
        killed = true
        kill(-pid, SIGKILL)
    }

    private func closeInput() {
        if inputFD >= 0 { close(inputFD); inputFD = -1 }
    }

    /// The first non-blank line of `text`, trimmed, at most 300 characters.
    static func firstLine(_ text: [UInt8]) -> String? {
        let lines = text.split(whereSeparator: { $0 == 10 || $0 == 13 })
        guard let line = lines.lazy.map({ String(decoding: $0, as: UTF8.self) })
            .map({ $0.trimmingBlanks }).first(where: { !$0.isEmpty }) else { return nil }
        return line.count > 300 ? String(line.prefix(300)) + "…" : line
    }
}

/// posix_spawn or one of the calls around it failed.
struct SpawnFailure: Error {
    let errno: Int32
}

extension String {
    var trimmingBlanks: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !($0 == " " || $0 == "\t") }) else { return "" }
        let last = scalars.lastIndex(where: { !($0 == " " || $0 == "\t") })!
        return String(scalars[first...last])
    }
}

/// Calls `body` with `strings` as a NULL-terminated array of C strings.
private func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for p in pointers { free(p) } }
    return body(pointers)
}
