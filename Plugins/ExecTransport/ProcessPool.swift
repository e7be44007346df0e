#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import CProcess
import Synchronization

/// Runs commands, up to `concurrency` at once, each with its own deadline, and
/// gives back how each ended, in the order given.
///
/// One thread and one `poll(2)`: over each command's standard input (fed as the
/// pipe takes it, so a large input never blocks the others), its standard error,
/// and its pidfd (readable when it ends). Timers for the deadlines are the poll's
/// timeout. A command that ends is reaped at once; a command past its deadline
/// gets SIGTERM on its process group and SIGKILL `grace` later, so a stuck command
/// and everything it started are gone when the call returns.
struct ProcessPool {
    /// One command to run.
    struct Job {
        var argv: [String]
        var environment: [String]
        var input: [UInt8]
    }

    var concurrency: Int
    var grace: Int64

    /// Runs in progress in this process (several flush workers run at once). Orphans
    /// are reaped with `waitpid(-1)`, which must never take a run's own child: only
    /// the last run to end reaps, holding this lock, so no run is starting a command.
    private static let runs = Mutex(0)

    func run(_ jobs: [Job], deadline milliseconds: Int64) -> [ChildEnd] {
        Self.runs.withLock { $0 += 1 }
        let ends = runAlone(jobs, deadline: milliseconds)
        Self.runs.withLock { active in
            active -= 1
            if active == 0 { Self.reapOrphans() }
        }
        return ends
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
                switch ChildProcess.start(argv: job.argv, environment: job.environment, input: job.input,
                                          deadline: Self.now() + milliseconds) {
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
                ends[index] = child.finish()
            }
        }
        return ends.map { $0! }
    }

    /// Makes msg the subreaper of what its commands start; a command's background
    /// process (sendmail's queue runner) outlives it and is left to run.
    static func becomeSubreaper() {
        _ = msg_become_subreaper()
    }

    /// Reaps orphaned descendants that have ended since. Only called when no run is
    /// in progress, so no status msg waits for is taken.
    static func reapOrphans() {
        var status: Int32 = 0
        while waitpid(-1, &status, WNOHANG) > 0 {}
    }

    /// Monotonic milliseconds.
    static func now() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Int64(t.tv_sec) * 1000 + Int64(t.tv_nsec) / 1_000_000
    }
}

/// SIGPIPE blocked on this thread while commands are fed, so a command that does
/// not read its input makes `write` fail with EPIPE instead of ending msg; a
/// SIGPIPE raised meanwhile is taken off the thread before the mask is put back.
private struct PipeSignalBlock {
    private var previous = sigset_t()
    private var set = sigset_t()

    init() {
        sigemptyset(&set)
        sigaddset(&set, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &set, &previous)
    }

    func end() {
        var set = self.set
        var previous = self.previous
        var pending = sigset_t()
        sigpending(&pending)
        if sigismember(&pending, SIGPIPE) == 1 && sigismember(&previous, SIGPIPE) == 0 {
            var zero = timespec(tv_sec: 0, tv_nsec: 0)
            _ = sigtimedwait(&set, nil, &zero)
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
    }
}
