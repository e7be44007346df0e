#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import Dispatch
import MsgKit
import MsgSupport
import Synchronization

/// Where events go (`--events FILE`, `--on-event CMD`): each ``DeliveryEvent`` as
/// one NDJSON line appended to the file, and to the command's standard input.
///
/// The file gets every event as it happens: the line is appended when the event is
/// emitted (one short write, under a lock), whatever the hook does. The hook is
/// never in delivery's way: its runs are handed to one thread of their own, one
/// event at a time, at most ``hookBacklog`` waiting; what it could not run (the
/// backlog full, or still waiting when the run ends) is counted on one line by
/// ``close()``. The command runs as exec:'s do, by the same runner
/// (``ProcessPool``: no shell; words split as a shell splits a simple command; a
/// process group of its own; no other descriptor; its standard error msg's) with
/// `MSG_EVENT`, `MSG_DESTINATION` and `MSG_ID` beside msg's environment, and has
/// ``hookDeadline`` to end: then its group gets SIGTERM, and SIGKILL a second later. A failed hook (exit status, signal, deadline, not started) is reported on
/// one line and never retried; the run goes on. At the end of a run, ``close()``
/// waits for the events still queued, at most ``closeWait``.
public final class EventSink: Sendable {
    public static let hookDeadline = MsgDuration.seconds(10)
    public static let closeWait = MsgDuration.seconds(30)
    /// The most hook runs that wait; past it an event is still in the file, and
    /// counted as not run by the hook.
    public static let hookBacklog = 1000

    private let file: String?
    private let fd: Int32
    private let argv: [String]?
    private let environment: [String]
    private let reporter: Reporter
    private let errorFD: Int32
    private let queue = DispatchQueue(label: "msg.events")
    private let group = DispatchGroup()
    private let fileFailed = Atomic<Bool>(false)
    private let fileLock = Mutex<Void>(())
    /// Hook runs waiting, and those given up (backlog full, or the run ended).
    private let waiting = Atomic<Int>(0)
    private let notRun = Atomic<Int>(0)
    private let closing = Atomic<Bool>(false)
    private let wait: MsgDuration

    /// A sink writing to `file` (created 0600 when missing, appended to) and running
    /// `command` (split into words) per event; ``close()`` waits `closeWait` for the hook.
    /// - Throws: `config` when the file cannot be opened or the command is empty.
    public init(file: String?, command: String?, environment: [String], reporter: Reporter, errorFD: Int32,
                closeWait: MsgDuration = EventSink.closeWait) throws(MsgError) {
        self.file = file
        self.wait = closeWait
        argv = try command.map { (c) throws(MsgError) in try ShellWords.command(c, what: "--on-event") }
        if let file {
            self.fd = try OutputPath.openAppending(file, option: "--events", mode: 0o600, code: .config)
        } else {
            fd = -1
        }
        self.environment = environment.filter { !$0.hasPrefix("MSG_EVENT=") && !$0.hasPrefix("MSG_DESTINATION=") && !$0.hasPrefix("MSG_ID=") }
        self.reporter = reporter
        self.errorFD = errorFD
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Appends `event` to the file now and queues the hook's run; returns at once.
    public func emit(_ event: DeliveryEvent) {
        let line = Array(event.line.utf8)
        if fd >= 0 { fileLock.withLock { _ in append(line) } }
        guard let argv else { return }
        if closing.load(ordering: .relaxed) {
            notRun.add(1, ordering: .relaxed)
            return
        }
        guard waiting.add(1, ordering: .relaxed).newValue <= Self.hookBacklog else {
            waiting.subtract(1, ordering: .relaxed)
            notRun.add(1, ordering: .relaxed)
            return
        }
        group.enter()
        queue.async { [self] in
            defer { group.leave() }
            waiting.subtract(1, ordering: .relaxed)
            // The run ended without waiting for this one: counted, not run.
            if closing.load(ordering: .relaxed) {
                notRun.add(1, ordering: .relaxed)
                return
            }
            run(argv, event: event, input: line)
        }
    }

    /// Waits for the hook's queued runs, at most `closeWait`; then says on one line
    /// how many events the hook did not get (they are in `--events FILE`, if given).
    public func close() {
        let timedOut = group.wait(timeout: .now() + .milliseconds(Int(wait.milliseconds))) == .timedOut
        closing.store(true, ordering: .relaxed)
        let n = notRun.load(ordering: .relaxed) + (timedOut ? waiting.load(ordering: .relaxed) : 0)
        guard n > 0 else { return }
        let kept = fd >= 0 ? "; every event is in \(file ?? "")" : ""
        let why = timedOut ? "its backlog was full, or it was still busy \(wait) after the run" : "its backlog was full"
        reporter.say("events: --on-event did not run for \(n) event\(n == 1 ? "" : "s") (\(why))\(kept)")
    }

    private func append(_ line: [UInt8]) {
        do throws(MsgError) {
            try SystemCalls.writeAll(fd, line, code: .storeIO, what: file ?? "")
        } catch {
            if !fileFailed.exchange(true, ordering: .relaxed) { reporter.say("events: \(error.message); events are not written there") }
        }
    }

    private func run(_ argv: [String], event: DeliveryEvent, input: [UInt8]) {
        var env = environment + ["MSG_EVENT=\(event.kind.rawValue)"]
        if !event.destination.utf8.contains(0) { env.append("MSG_DESTINATION=\(event.destination)") }
        if let id = event.id { env.append("MSG_ID=\(id)") }
        let what = "--on-event for \(event.kind.rawValue) of \(TextTable.escaped(event.destination))"
        // exec:'s runner, one at a time; what the hook says goes to msg's stderr.
        let job = ProcessPool.Job(argv: argv, environment: env, input: input, errorOutput: errorFD)
        guard let end = Self.runner.run([job], deadline: Self.hookDeadline.milliseconds).first else { return }
        switch end.how {
        case .exited(0): return
        case .exited(let status): reporter.say("\(what): exited \(status); not retried")
        case .signalled(let signal): reporter.say("\(what): killed by signal \(signal); not retried")
        case .timedOut: reporter.say("\(what): still running after \(Self.hookDeadline), killed; not retried")
        case .notStarted(let e): reporter.say("\(what): cannot start \(argv[0]) (\(String(cString: strerror(e)))); not retried")
        }
    }

    /// The hook's runner: one command at a time, a second between SIGTERM and SIGKILL.
    private static let runner = ProcessPool(concurrency: 1, grace: 1000)
}
