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
}
