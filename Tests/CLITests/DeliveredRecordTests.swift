import Foundation
import MsgKit
import Testing

/// What a destination receives is the record as stored, without the sender's lease
/// and history, with status `delivered` (msg-record(5)), whatever the transport.
@Suite(.timeLimit(.minutes(3))) struct DeliveredRecordTests {
    func check(_ text: String, _ stored: Message, _ transport: String) throws {
        let lines = text.split(separator: "\n")
        #expect(lines.count == 1, "\(transport): one line")
        let value = try JSONParser.parse(String(lines.first ?? ""))
        #expect(value["lease"] == nil && value["history"] == nil, "\(transport): \(text)")
        var expected = stored
        expected.status = .delivered
        expected.lease = nil
        expected.history = []
        var received = try Message(json: value)
        received.updatedAt = expected.updatedAt  // the sending attempt changed it
        received.attempts = expected.attempts
        #expect(received == expected, "\(transport): \(text)")
    }

    @Test func everyTransportDeliversTheSameRecord() throws {
        let s = try Sandbox()
        let listener = try ListenerProcess(s)
        let r = try s.sh("""
            for t in stdout file tcp; do msg compose --to "$t" --body hi --header k=v --enqueue > /dev/null; done
            msg queue ls --to stdout | msg flush --transport 'stdout:?fd=3' 3> mock.ndjson > /dev/null
            msg queue ls --to file | msg flush --transport file:drop > /dev/null
            msg queue ls --to tcp | msg flush --transport '\(listener.url)' > /dev/null
            msg queue ls --history
            """)
        let stored = try records(r.out)
        #expect(stored.count == 3 && stored.allSatisfy { $0.status == .sent }, "\(r.out)\(r.err)")
        for m in stored {
            switch m.to {
            case "stdout": try check(try String(contentsOfFile: s.home + "/mock.ndjson", encoding: .utf8), m, "stdout:")
            case "file": try check(try String(contentsOfFile: "\(s.home)/drop/new/\(m.id).json", encoding: .utf8), m, "file:")
            default: try check(try String(contentsOfFile: "\(s.home)/inbox/new/\(m.id).json", encoding: .utf8), m, "tcp:// into file:")
            }
        }
        _ = listener.stop()
    }
}
