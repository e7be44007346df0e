import MsgKit
import MsgSupport

/// Where events go (`--events FILE`, `--on-event CMD`): each ``DeliveryEvent`` as
/// one NDJSON line appended to the file (``EventFile``), and to the command's
/// standard input (``EventHook``).
///
/// The file gets every event as it happens, whatever the hook does: the line is
/// appended when the event is emitted. The hook is never in delivery's way: its runs
/// wait on a thread of their own, at most ``hookBacklog`` of them, each with
/// ``hookDeadline`` to end; a failed one is reported on one line and never retried,
/// and the run goes on. At the end of a run, ``close()`` waits for the events still
/// queued, at most ``closeWait``, and counts on one line those the hook did not get.
public final class EventSink: Sendable {
    public static let hookDeadline = MsgDuration.seconds(10)
    public static let closeWait = MsgDuration.seconds(30)
    /// The most hook runs that wait; past it an event is still in the file, and
    /// counted as not run by the hook.
    public static let hookBacklog = 1000

    private let file: EventFile?
    private let hook: EventHook?

    /// A sink writing to `file` (created 0600 when missing, appended to) and running
    /// `command` (split into words as a shell splits a simple command) per event;
    /// ``close()`` waits `closeWait` for the hook.
    /// - Throws: `config` when the file cannot be opened or the command is empty.
    public init(file: String?, command: String?, environment: [String], reporter: Reporter, errorFD: Int32,
                closeWait: MsgDuration = EventSink.closeWait) throws(MsgError) {
        let argv = try command.map { (c) throws(MsgError) in try ShellWords.command(c, what: "--on-event") }
        self.file = try file.map { (path) throws(MsgError) in try EventFile(path, reporter: reporter) }
        hook = argv.map { EventHook(argv: $0, environment: environment, reporter: reporter, errorFD: errorFD, closeWait: closeWait) }
    }

    /// Appends `event` to the file now and queues the hook's run; returns at once.
    public func emit(_ event: DeliveryEvent) {
        let line = Array(event.line.utf8)
        file?.append(line)
        hook?.enqueue(event, line: line)
    }

    /// Waits for the hook's queued runs, at most `closeWait`; then says on one line
    /// how many events the hook did not get (they are in `--events FILE`, if given).
    public func close() {
        hook?.close(kept: file.map { "; every event is in \($0.path)" } ?? "")
    }
}
