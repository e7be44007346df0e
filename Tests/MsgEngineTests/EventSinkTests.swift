import Foundation
import MsgEngine
import MsgKit
import Synchronization
import Testing

/// `EventSink` (#33): the file gets each event when it is emitted, whatever the
/// hook does; what the hook could not run by the end is counted on one line.
@Suite(.timeLimit(.minutes(3))) struct EventSinkTests {
    @Test func theFileHasEveryEventAtOnceAndWhatTheHookMissedIsCounted() throws {
        let file = temporaryDirectory() + "/events.ndjson"
        let said = Mutex<[String]>([])
        let sink = try EventSink(file: file, command: "sleep 1", environment: [], reporter: Reporter { line in said.withLock { $0.append(line) } },
                                 errorFD: 2, closeWait: MsgDuration(milliseconds: 100))
        for i in 1...3 { sink.emit(DeliveryEvent(.dead, at: Timestamp(milliseconds: Int64(i)), destination: "d\(i)")) }
        // Emitted: in the file already, while the first hook runs for a second.
        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 3 && lines.allSatisfy { $0.contains(#""event":"dead""#) }, "\(lines)")
        sink.close()
        let lost = said.withLock { $0 }
        #expect(lost == ["events: --on-event did not run for 2 events (its backlog was full, or it was still busy 100ms after the run); every event is in \(file)"],
                "\(lost)")
    }

    /// The hook runs through exec:'s runner: its standard input is the event's line,
    /// its environment says which, what it writes on standard error goes to msg's,
    /// and an exit status or a command that cannot start is one line, not retried.
    @Test func theHookRunsAsExecsCommandsDo() throws {
        let dir = temporaryDirectory()
        let script = dir + "/hook.sh"
        try "cat > \"$DIR/in-$MSG_DESTINATION\"; echo \"hook says $MSG_EVENT for $MSG_ID\" >&2; exit 3\n".write(toFile: script, atomically: true, encoding: .utf8)
        let errors = open(dir + "/stderr", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(errors) }
        let said = Mutex<[String]>([])
        let reporter = Reporter { line in said.withLock { $0.append(line) } }
        let sink = try EventSink(file: nil, command: "/bin/sh \(script)", environment: ["DIR=\(dir)", "PATH=/usr/bin:/bin"], reporter: reporter,
                                 errorFD: errors)
        sink.emit(DeliveryEvent(.dead, at: Timestamp(milliseconds: 5), destination: "d1", id: "m-1"))
        sink.close()
        let input = try String(contentsOfFile: dir + "/in-d1", encoding: .utf8)
        #expect(input.contains(#""event":"dead""#) && input.contains(#""destination":"d1""#), "\(input)")
        #expect(try String(contentsOfFile: dir + "/stderr", encoding: .utf8) == "hook says dead for m-1\n")
        let missing = try EventSink(file: nil, command: "/nonexistent/hook", environment: [], reporter: reporter, errorFD: errors)
        missing.emit(DeliveryEvent(.dead, at: Timestamp(milliseconds: 6), destination: "d2"))
        missing.close()
        #expect(said.withLock { $0 } == ["--on-event for dead of d1: exited 3; not retried",
                                        "--on-event for dead of d2: cannot start /nonexistent/hook (No such file or directory); not retried"])
    }
}
