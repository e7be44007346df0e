import Foundation
import MsgKit
import MsgKitTesting
import Testing

/// SIGTERM, SIGINT and a closed standard output stop `flush` and `retry` at the next
/// transport call: the outcomes in flight are recorded, the rest is put back as it
/// was, and no message is left `sending`.
/// Their limit is the suite's: on two cores the whole run's blocking tests can hold
/// the test pool's threads for a minute, and a hang still fails in three.
@Suite(.timeLimit(.minutes(3))) struct StopTests {
    /// 2,000 queued messages and a destination answering in 50 ms each: flushing them
    /// all would take 100 s, far past each test's time limit.
    func slowQueue() throws -> Sandbox {
        let s = try Sandbox()
        _ = try s.sh("seq 2000 | awk '{printf \"{\\\"to\\\":\\\"u%d\\\",\\\"body\\\":\\\"b\\\"}\\n\", $1}' | msg compose --enqueue > /dev/null")
        return s
    }

    /// Waits until the process printed its first record: a batch was recorded.
    func firstRecord(_ out: Pipe) -> Bool {
        var data = Data()
        while !data.contains(0x0A) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { return false }
            data += chunk
        }
        return true
    }

    func counts(_ s: Sandbox) throws -> [String] {
        try s.sh("for st in sending sent queued failed; do echo \"$st $(msg queue count --status $st)\"; done").lines
    }

    @Test
    func sigtermStopsABusyWatchWithNothingLeftSending() throws {
        let s = try slowQueue()
        let (p, out, err) = try s.start(["flush", "--watch", "--batch", "64", "--transport", "stdout:?latency=50ms&fd=3"])
        #expect(firstRecord(out))
        kill(p.processIdentifier, SIGTERM)
        try p.wait()
        #expect(p.terminationReason == .exit && p.terminationStatus == 0)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let line = try #require(stderr.split(separator: "\n").last { $0.hasPrefix("msg: stopping (SIGTERM): ") })
        let c = try counts(s)
        #expect(c.first == "sending 0", "\(c)")
        let sent = Int(c[1].split(separator: " ")[1]) ?? -1, queued = Int(c[2].split(separator: " ")[1]) ?? -1
        #expect(sent > 0 && queued > 0 && sent + queued == 2000, "\(c)")
        #expect(line.contains("\(sent) sent, 0 left to retry, 0 dead; "), "\(line)")
    }

    @Test
    func ctrlCInterruptsAPlainFlushWhichEndsAsTheSignalWould() throws {
        let s = try slowQueue()
        let (p, out, err) = try s.start(["flush", "--batch", "64", "--transport", "stdout:?latency=50ms&fd=3"])
        #expect(firstRecord(out))
        kill(p.processIdentifier, SIGINT)
        try p.wait()
        #expect(p.terminationReason == .uncaughtSignal && p.terminationStatus == SIGINT, "a shell loop around it stops too")
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(stderr.contains("msg: stopping (SIGINT): ") && stderr.contains("not attempted were put back untouched"), "\(stderr)")
        #expect(try counts(s).first == "sending 0")
    }

    @Test
    func aClosedOutputStopsAFlush() throws {
        let s = try slowQueue()
        let r = try s.sh("msg flush --batch 64 --transport 'stdout:?latency=5ms&fd=3' 3>/dev/null | head -1 | wc -l; echo \"${PIPESTATUS[0]}\"")
        #expect(r.lines == ["1", "141"], "\(r.out)\(r.err)")
        #expect(r.err.isEmpty, "a closed pipe is not worth a word: \(r.err)")
        let c = try counts(s)
        #expect(c.first == "sending 0" && c[2] != "queued 0", "\(c)")
    }

    /// Put back means as before the claim: a failed message keeps its attempts and
    /// its next due time.
    @Test
    func aStoppedRetryPutsFailedMessagesBackAsTheyWere() throws {
        let s = try slowQueue()
        _ = try s.sh("msg flush --transport 'stdout:?fail=1&fd=3' 3>/dev/null > /dev/null")
        let before = try s.sh("msg queue ls --status failed | cut -c1-36 | sort | md5sum; msg queue ls --status failed | md5sum").out
        let (p, out, _) = try s.start(["retry", "--now", "--batch", "64", "--transport", "stdout:?latency=50ms&fd=3"])
        #expect(firstRecord(out))
        kill(p.processIdentifier, SIGTERM)
        try p.wait()
        #expect(p.terminationReason == .uncaughtSignal && p.terminationStatus == SIGTERM)
        let c = try counts(s)
        #expect(c.first == "sending 0" && c[2] == "queued 0", "\(c)")
        let failed = try records(try s.sh("msg queue ls --status failed --history").out)
        #expect(failed.count > 0 && failed.allSatisfy { $0.attempts == 1 && $0.history.map(\.event) == ["queued", "attempt", "failed"] })
        #expect(!before.isEmpty)
    }
}
