#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import Dispatch
import MsgKit
import MsgSupport
import Synchronization

/// `--on-event CMD` (``EventSink``): the command run once per event, never in
/// delivery's way. Its runs are handed to one thread of their own, one event at a
/// time, at most ``EventSink/hookBacklog`` waiting; what it could not run (the
/// backlog full, or still waiting when the run ends) is counted on one line by
/// ``close(kept:)``. It runs as exec:'s commands do, by the same runner
/// (``ProcessPool``: no shell; a process group of its own; no other descriptor; its
/// standard error msg's), with `MSG_EVENT`, `MSG_DESTINATION` and `MSG_ID` beside
/// msg's environment, and has ``EventSink/hookDeadline`` to end: then its group gets
/// SIGTERM, and SIGKILL a second later. A failed run is reported on one line and
/// never retried.
final class EventHook: Sendable {
    private let argv: [String]
    private let environment: [String]
    private let reporter: Reporter
    private let errorFD: Int32
    private let wait: MsgDuration
    private let queue = DispatchQueue(label: "msg.events")
    private let group = DispatchGroup()
    /// Runs waiting, and those given up (backlog full, or the run ended).
    private let waiting = Atomic<Int>(0)
    private let notRun = Atomic<Int>(0)
    private let closing = Atomic<Bool>(false)

    init(argv: [String], environment: [String], reporter: Reporter, errorFD: Int32, closeWait: MsgDuration) {
        self.argv = argv
        self.environment = environment.filter { !$0.hasPrefix("MSG_EVENT=") && !$0.hasPrefix("MSG_DESTINATION=") && !$0.hasPrefix("MSG_ID=") }
        self.reporter = reporter
        self.errorFD = errorFD
        self.wait = closeWait
    }

    /// Queues the run for `event`, whose line is `line`; returns at once.
    func enqueue(_ event: DeliveryEvent, line: [UInt8]) {
        if closing.load(ordering: .relaxed) {
            notRun.add(1, ordering: .relaxed)
            return
        }
        guard waiting.add(1, ordering: .relaxed).newValue <= EventSink.hookBacklog else {
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
            run(event, input: line)
        }
    }

    /// Waits for the queued runs, at most `closeWait`; then says on one line how many
    /// events the hook did not get, and `kept`: where they are else.
    func close(kept: String) {
        let timedOut = group.wait(timeout: .now() + .milliseconds(Int(wait.milliseconds))) == .timedOut
        closing.store(true, ordering: .relaxed)
        let n = notRun.load(ordering: .relaxed) + (timedOut ? waiting.load(ordering: .relaxed) : 0)
        guard n > 0 else { return }
        let why = timedOut ? "its backlog was full, or it was still busy \(wait) after the run" : "its backlog was full"
        reporter.say("events: --on-event did not run for \(n) event\(n == 1 ? "" : "s") (\(why))\(kept)")
    }

    private func run(_ event: DeliveryEvent, input: [UInt8]) {
        var env = environment + ["MSG_EVENT=\(event.kind.rawValue)"]
        if !event.destination.utf8.contains(0) { env.append("MSG_DESTINATION=\(event.destination)") }
        if let id = event.id { env.append("MSG_ID=\(id)") }
        let what = "--on-event for \(event.kind.rawValue) of \(TextTable.escaped(event.destination))"
        // exec:'s runner, one at a time; what the hook says goes to msg's stderr.
        let job = ProcessPool.Job(argv: argv, environment: env, input: input, errorOutput: errorFD)
        guard let end = Self.runner.run([job], deadline: EventSink.hookDeadline.milliseconds).first else { return }
        switch end.how {
        case .exited(0): return
        case .exited(let status): reporter.say("\(what): exited \(status); not retried")
        case .signalled(let signal): reporter.say("\(what): killed by signal \(signal); not retried")
        case .timedOut: reporter.say("\(what): still running after \(EventSink.hookDeadline), killed; not retried")
        case .notStarted(let e): reporter.say("\(what): cannot start \(argv[0]) (\(String(cString: strerror(e)))); not retried")
        }
    }

    /// The runner: one command at a time, a second between SIGTERM and SIGKILL.
    private static let runner = ProcessPool(concurrency: 1, grace: 1000)
}
