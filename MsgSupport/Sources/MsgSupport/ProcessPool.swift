#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import CProcess
import Dispatch
import Synchronization

/// Runs commands, up to `concurrency` at once, each with its own deadline, and
/// gives back how each ended, in the order given: the one process runner of
/// exec: and of the event hook (`--on-event`).
///
/// One thread and one `poll(2)`: over each command's standard input (fed as the
/// pipe takes it, so a large input never blocks the others), its standard error,
/// and its pidfd (readable when it ends). Timers for the deadlines are the poll's
/// timeout. A command that ends is reaped at once; a command past its deadline
/// gets SIGTERM on its process group and SIGKILL `grace` later, so a stuck command
/// and everything it started are gone when the call returns.
public struct ProcessPool: Sendable {
    /// One command to run.
    public struct Job: Sendable {
        public var argv: [String]
        public var environment: [String]
        public var input: [UInt8]
        /// Where its standard error goes (a descriptor of msg's, such as its own
        /// standard error); nil: read, and its first line kept (``ChildEnd``).
        public var errorOutput: Int32?

        public init(argv: [String], environment: [String], input: [UInt8], errorOutput: Int32? = nil) {
            self.argv = argv
            self.environment = environment
            self.input = input
            self.errorOutput = errorOutput
        }
    }

    public var concurrency: Int
    /// Milliseconds between SIGTERM and SIGKILL for a command past its deadline.
    public var grace: Int64

    public init(concurrency: Int, grace: Int64) {
        self.concurrency = concurrency
        self.grace = grace
    }

    /// The commands of this process (every pool's, as several flush workers run at
    /// once): the pids running, and the process groups they made (a group's id is
    /// its leader's pid). Orphans are reaped by pid, never with `waitpid(-1)`, and
    /// only when they are in one of these groups: no run's own child, and no child
    /// the rest of the process started (a test runner's), is ever taken from its
    /// waiter. A child is started and entered here under this lock; the reaper holds
    /// it too.
    private struct Commands {
        var running = Set<pid_t>()
        var groups = Set<pid_t>()
    }
    private static let commands = Mutex(Commands())

    /// Runs `jobs`, each with `milliseconds` to end. - Returns: how each ended, in order.
    public func run(_ jobs: [Job], deadline milliseconds: Int64) -> [ChildEnd] {
        let ends = runAlone(jobs, deadline: milliseconds)
        Self.reapOrphans()
        return ends
    }

    /// Starts one job and enters its pid among the commands, under the lock.
    private static func start(_ job: Job, deadline: Int64) -> Result<ChildProcess, SpawnFailure> {
        commands.withLock { ours in
            let started = ChildProcess.start(argv: job.argv, environment: job.environment, input: job.input, errorOutput: job.errorOutput,
                                             deadline: deadline)
            if case .success(let child) = started {
                ours.running.insert(child.pid)
                ours.groups.insert(child.pid)
            }
            return started
        }
    }

    /// Reaps `child` (``ChildProcess/finish()``) and forgets its pid.
    private static func finish(_ child: ChildProcess) -> ChildEnd {
        let end = child.finish()
        commands.withLock { _ = $0.running.remove(child.pid) }
        return end
    }

    private func runAlone(_ jobs: [Job], deadline milliseconds: Int64) -> [ChildEnd] {
        var ends = [ChildEnd?](repeating: nil, count: jobs.count)
        var running: [(index: Int, child: ChildProcess)] = []
        var next = 0
        let pipeSignal = PipeSignalBlock()
        defer { pipeSignal.end() }
        while next < jobs.count || !running.isEmpty {
            while running.count < concurrency && next < jobs.count {
                let job = jobs[next]
                switch Self.start(job, deadline: Self.now() + milliseconds) {
                case .success(let child): running.append((next, child))
                case .failure(let failure): ends[next] = ChildEnd(how: .notStarted(failure.errno), firstErrorLine: nil)
                }
                next += 1
            }
            guard !running.isEmpty else { continue }
            let now = Self.now()
            var wake = Int64.max
            for (_, child) in running {
                if let at = child.enforceDeadline(now: now, grace: grace) { wake = min(wake, at) }
            }
            var fds: [pollfd] = []
            var owners: [(slot: Int, kind: Int)] = []  // kind 0 input, 1 error, 2 ended
            for (slot, entry) in running.enumerated() {
                let child = entry.child
                if child.inputFD >= 0 { fds.append(pollfd(fd: child.inputFD, events: Int16(POLLOUT), revents: 0)); owners.append((slot, 0)) }
                if child.errorFD >= 0 { fds.append(pollfd(fd: child.errorFD, events: Int16(POLLIN), revents: 0)); owners.append((slot, 1)) }
                fds.append(pollfd(fd: child.pidfd, events: Int16(POLLIN), revents: 0))
                owners.append((slot, 2))
            }
            let timeout = wake == .max ? -1 : Int32(clamping: max(0, wake - now))
            let ready = poll(&fds, nfds_t(fds.count), timeout)
            if ready <= 0 { continue }  // a timer fired, or EINTR
            var ended: Set<Int> = []
            for (i, fd) in fds.enumerated() where fd.revents != 0 {
                let (slot, kind) = owners[i]
                let child = running[slot].child
                switch kind {
                case 0: child.writeInput()
                case 1: child.readError()
                default: ended.insert(slot)
                }
            }
            for slot in ended.sorted(by: >) {
                let (index, child) = running.remove(at: slot)
                ends[index] = Self.finish(child)
            }
        }
        return ends.map { $0! }
    }

    /// Makes msg the subreaper of what its commands start; a command's background
    /// process (sendmail's queue runner) outlives it and is left to run. Orphans are
    /// reaped after every run and, while msg waits for work, four times a second.
    public static func becomeSubreaper() {
        _ = msg_become_subreaper()
        reaper.withLock { timer in
            guard timer == nil else { return }
            let source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "msg.exec.reaper"))
            source.schedule(deadline: .now() + .milliseconds(250), repeating: .milliseconds(250), leeway: .milliseconds(100))
            source.setEventHandler { reapOrphans() }
            source.resume()
            timer = source
        }
    }

    /// The timer that reaps orphans between runs (one per process).
    private static let reaper = Mutex<(any DispatchSourceTimer)?>(nil)

    /// Reaps the orphaned descendants that have ended: msg's children that are not
    /// its commands but are in a command's process group (what a command left
    /// running, reparented to msg, the subreaper). Called after every run, while
    /// others run, and four times a second, so zombies never pile up under steady
    /// load. The children are read from `/proc/self/task/*/children`, each one's
    /// state and group from `/proc/PID/stat`, and each is waited for by pid, without
    /// blocking; where the kernel offers no `children` file, nothing is reaped here.
    /// Groups with nothing left in them are forgotten.
    static func reapOrphans() {
        commands.withLock { ours in
            var live = Set<pid_t>()
            for pid in childProcesses() where !ours.running.contains(pid) {
                guard let (state, group) = status(of: pid), ours.groups.contains(group) else { continue }
                if state == UInt8(ascii: "Z") {
                    var status: Int32 = 0
                    _ = waitpid(pid, &status, WNOHANG)
                } else {
                    live.insert(group)
                }
            }
            ours.groups = ours.groups.filter { ours.running.contains($0) || live.contains($0) }
        }
    }

    /// The state letter and process group of `pid`, from `/proc/PID/stat`.
    static func status(of pid: pid_t) -> (UInt8, pid_t)? {
        let fd = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 512)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0, let end = buffer[0..<n].lastIndex(of: UInt8(ascii: ")")) else { return nil }
        // "pid (comm) S ppid pgrp …": the name may hold anything, so from its last ")".
        let fields = buffer[(end + 1)..<n].split(separator: 0x20)
        guard fields.count > 3, let state = fields[0].first, let group = pid_t(String(decoding: fields[2], as: UTF8.self)) else { return nil }
        return (state, group)
    }

    /// This process's children, from every thread's `children` file (an orphan is
    /// given to one thread of the subreaper).
    static func childProcesses() -> [pid_t] {
        var pids: [pid_t] = []
        guard let dir = opendir("/proc/self/task") else { return [] }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.first?.isNumber == true else { continue }
            let fd = open("/proc/self/task/\(name)/children", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            var text: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 { text += buffer[0..<n]; continue }
                if n < 0 && errno == EINTR { continue }
                break
            }
            close(fd)
            for word in text.split(separator: 0x20) {
                if let pid = pid_t(String(decoding: word, as: UTF8.self)) { pids.append(pid) }
            }
        }
        return pids
    }

    /// Monotonic milliseconds.
    static func now() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Int64(t.tv_sec) * 1000 + Int64(t.tv_nsec) / 1_000_000
    }
}
