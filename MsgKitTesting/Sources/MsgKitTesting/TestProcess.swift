#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import CProcess
import Dispatch
import Foundation
import MsgKit

/// A child process for tests, started with posix_spawn and waited for through a
/// pidfd and waitpid: never through Foundation's `Process`, whose
/// `waitUntilExit()` on Linux spins the calling thread's run loop and, called from
/// test worker threads with many children at once, was seen to park a thread
/// forever for a child that had already exited (a whole suite then hung).
///
/// It reads as `Process` does (the same properties, `run()`), with two rules of
/// its own:
/// - **Every child has a deadline.** When it is still running then, its whole
///   process group gets SIGKILL (so every read of its pipes ends), and ``wait()``
///   throws ``Timeout`` naming the command. No test waits for good.
/// - **A child holds nothing of another's.** It starts in a process group of its
///   own with only descriptors 0, 1 and 2 open (Foundation's pipes are not
///   close-on-exec; a long-lived server that inherited another test's pipe would
///   keep that test's read from ever seeing the end).
///
/// `standardInput`, `standardOutput` and `standardError` take a `FileHandle` or a
/// `Pipe`, as `Process`'s do; standard input defaults to /dev/null, the other two
/// to this process's own.
public final class TestProcess: @unchecked Sendable {
    /// How a child ended, as `Process.TerminationReason` says it.
    public enum TerminationReason: Sendable, Equatable {
        case exit
        case uncaughtSignal
    }

    /// A child still running at its deadline: it was killed, with its group.
    public struct Timeout: Error, CustomStringConvertible {
        public let command: String
        public let seconds: Double
        public var description: String { "still running after \(seconds) s, killed: \(command)" }
    }

    /// The deadline of a child whose own was not given: under the shortest time
    /// limit of a test suite here (2 minutes), so a hang fails the one test that has
    /// it, with its command named, instead of the whole suite at its limit.
    public static let defaultTimeout: Double = 100

    public var executableURL: URL?
    public var arguments: [String] = []
    /// nil: this process's environment.
    public var environment: [String: String]?
    public var currentDirectoryURL: URL?
    public var standardInput: Any?
    public var standardOutput: Any?
    public var standardError: Any?
    /// Seconds from `run()` to the child's deadline.
    public var timeout: Double

    public private(set) var processIdentifier: Int32 = 0
    public private(set) var terminationStatus: Int32 = 0
    public private(set) var terminationReason: TerminationReason = .exit

    private let lock = NSLock()
    private var pidfd: Int32 = -1
    private var reaped = false
    private var timedOut = false

    public init(timeout: Double = TestProcess.defaultTimeout) {
        self.timeout = timeout
    }

    /// A child of `argv` (`argv[0]` a path), ready to `run()`.
    public convenience init(_ argv: [String], timeout: Double = TestProcess.defaultTimeout) {
        self.init(timeout: timeout)
        executableURL = argv.first.map { URL(fileURLWithPath: $0) }
        arguments = Array(argv.dropFirst())
    }

    deinit {
        // A child nobody waited for: end its group and reap it, so none outlives its test.
        if processIdentifier > 0 && !reaped {
            kill(-processIdentifier, SIGKILL)
            var status: Int32 = 0
            while waitpid(processIdentifier, &status, 0) < 0 && errno == EINTR {}
        }
        if pidfd >= 0 { close(pidfd) }
    }

    /// What the child runs, for messages.
    public var command: String {
        ([executableURL?.path ?? "?"] + arguments).joined(separator: " ")
    }

    public func run() throws {
        guard let path = executableURL?.path else { throw MsgError(.usage, "TestProcess: no executable") }
        var opened: [Int32] = []
        defer { for fd in opened { close(fd) } }
        func descriptor(_ value: Any?, input: Bool, default fallback: Int32) throws -> Int32 {
            switch value {
            case nil:
                if fallback >= 0 { return fallback }
            case let pipe as Pipe:
                return input ? pipe.fileHandleForReading.fileDescriptor : pipe.fileHandleForWriting.fileDescriptor
            case let handle as FileHandle where handle !== FileHandle.nullDevice:
                return handle.fileDescriptor
            case is FileHandle:
                break
            default:
                throw MsgError(.usage, "TestProcess: a standard stream must be a FileHandle or a Pipe")
            }
            let fd = open("/dev/null", input ? O_RDONLY : O_WRONLY)
            guard fd >= 0 else { throw MsgError(.storeIO, "TestProcess: /dev/null: errno \(errno)") }
            opened.append(fd)
            return fd
        }
        let stdinFD = try descriptor(standardInput, input: true, default: -1)
        let stdoutFD = try descriptor(standardOutput, input: false, default: 1)
        let stderrFD = try descriptor(standardError, input: false, default: 2)
        let env = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let rc = withCStrings([path] + arguments) { argv in
            withCStrings(env) { envp in
                if let dir = currentDirectoryURL?.path {
                    return dir.withCString { msg_spawn_io(argv[0], argv, envp, $0, stdinFD, stdoutFD, stderrFD, &pid) }
                }
                return msg_spawn_io(argv[0], argv, envp, nil, stdinFD, stdoutFD, stderrFD, &pid)
            }
        }
        guard rc == 0 else { throw MsgError(.unavailable, "TestProcess: cannot start \(command): \(String(cString: strerror(rc)))") }
        pidfd = msg_pidfd_open(pid)
        guard pidfd >= 0 else {
            // Cannot be waited for with a deadline: end it at once.
            let e = errno
            kill(-pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            throw MsgError(.unavailable, "TestProcess: pidfd_open: errno \(e)")
        }
        processIdentifier = pid
        // The child's ends of pipes are the child's alone now, as Process does.
        for (value, input) in [(standardInput, true), (standardOutput, false), (standardError, false)] {
            if let pipe = value as? Pipe { try? (input ? pipe.fileHandleForReading : pipe.fileHandleForWriting).close() }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [weak self] in self?.expire() }
    }

    /// The deadline: SIGKILL to the group, unless the child was reaped (then its
    /// pid, which is the group's id, may belong to another process already).
    private func expire() {
        lock.lock()
        defer { lock.unlock() }
        guard !reaped, processIdentifier > 0 else { return }
        timedOut = true
        kill(-processIdentifier, SIGKILL)
    }

    /// Whether the child has not ended yet (it is not reaped by asking).
    public var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        guard processIdentifier > 0, !reaped else { return false }
        var p = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) == 0
    }

    /// Waits for the child to end and reaps it.
    /// - Throws: ``Timeout`` when it ran into its deadline and was killed.
    public func wait() throws {
        guard processIdentifier > 0 else { return }
        // The deadline's SIGKILL ends it; the poll needs no timeout of its own, and
        // after it waitpid does not block (the lock is not held while waiting).
        var p = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
        while poll(&p, 1, -1) < 0 && errno == EINTR {}
        lock.lock()
        defer { lock.unlock() }
        if !reaped {
            var status: Int32 = 0
            while waitpid(processIdentifier, &status, 0) < 0 && errno == EINTR {}
            reaped = true
            if status & 0x7f == 0 {
                terminationReason = .exit
                terminationStatus = (status >> 8) & 0xff
            } else {
                terminationReason = .uncaughtSignal
                terminationStatus = status & 0x7f
            }
        }
        if timedOut { throw Timeout(command: command, seconds: timeout) }
    }

    /// Sends `signal` to the child (not its group), unless it was reaped.
    public func signal(_ signal: Int32) {
        lock.lock()
        defer { lock.unlock() }
        guard processIdentifier > 0, !reaped else { return }
        kill(processIdentifier, signal)
    }

    /// SIGTERM, as `Process.terminate()`.
    public func terminate() { signal(SIGTERM) }
}

extension TestProcess {
    /// What a script printed and how it ended.
    public struct Output: Sendable {
        public let status: Int32
        /// Standard output and standard error, together as written.
        public let text: String
    }

    /// Runs `script` with /bin/sh to its end (in `directory`, if given), standard
    /// input /dev/null, standard output and error together into a file (not a pipe:
    /// something the script left running may hold a pipe open past its end).
    /// - Throws: ``Timeout``, with what it printed, when it runs into its deadline.
    public static func sh(_ script: String, in directory: String? = nil, timeout: Double = defaultTimeout) throws -> Output {
        let path = NSTemporaryDirectory() + "msg-test-sh-" + UUID().uuidString
        guard FileManager.default.createFile(atPath: path, contents: nil) else { throw MsgError(.storeIO, "cannot create \(path)") }
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? file.close() }
        let p = TestProcess(["/bin/sh", "-c", script], timeout: timeout)
        p.currentDirectoryURL = directory.map { URL(fileURLWithPath: $0) }
        p.standardOutput = file
        p.standardError = file
        try p.run()
        let ended = Result { try p.wait() }
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        if case .failure(let error) = ended { throw MsgError(.unavailable, "\(error)\n\(text)") }
        return Output(status: p.terminationReason == .exit ? p.terminationStatus : 128 + p.terminationStatus, text: text)
    }
}

/// Calls `body` with `strings` as a NULL-terminated array of C strings.
private func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for p in pointers { free(p) } }
    return body(pointers)
}
