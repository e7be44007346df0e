import Foundation
import MsgKit
import MsgKitTesting
import Testing

@Suite(.timeLimit(.minutes(3))) struct WatchTests {
    /// Reads `pipe` until it holds `count` complete lines.
    func readLines(_ pipe: Pipe, count: Int) -> [String] {
        var data = Data()
        while data.filter({ $0 == 0x0A }).count < count {
            let chunk = pipe.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            data += chunk
        }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    @Test
    func watchSendsNewWorkAndStopsCleanlyOnSIGTERM() throws {
        let s = try Sandbox()
        _ = try s.sh("msg compose --to a --body first --enqueue")
        let (p, out, err) = try s.start(["flush", "--watch"])
        // What was queued before it started...
        let first = readLines(out, count: 1)
        #expect(try records(first.joined(separator: "\n")).map(\.body) == ["first"])
        // ...and what is queued while it runs.
        _ = try s.sh("msg compose --to a --body second --enqueue")
        let second = readLines(out, count: 1)
        #expect(try records(second.joined(separator: "\n")).map { "\($0.body) \($0.status)" } == ["second sent"])
        kill(p.processIdentifier, SIGTERM)
        try p.wait()
        #expect(p.terminationReason == .exit && p.terminationStatus == 0)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(stderr == "msg: stopping (SIGTERM): 2 sent, 0 left to retry, 0 dead\n")
        #expect(try s.sh("msg queue count --status sent").out == "2\n")
    }

    /// A SQLite store whose directory is moved away under a `flush --watch` stays
    /// its store: the open handle goes on with the moved file (new work added there
    /// is sent), and no fresh empty store is made at the old path.
    @Test
    func aWatchKeepsItsSQLiteStoreWhenItsDirectoryIsMoved() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            mkdir d && msg compose --to a --body first --store sqlite:d/q.sqlite --enqueue > /dev/null
            msg flush --watch --store sqlite:d/q.sqlite > out 2> err & p=$!
            until [ "$(wc -l < out)" -ge 1 ] || ! kill -0 $p 2>/dev/null; do sleep 0.01; done
            mv d moved
            msg compose --to a --body second --store sqlite:moved/q.sqlite --enqueue > /dev/null
            until [ "$(wc -l < out)" -ge 2 ] || ! kill -0 $p 2>/dev/null; do sleep 0.01; done
            kill -TERM $p; wait $p; echo "exit $?"
            [ -e d ] && echo "a fresh d" || echo "no d"
            msg queue count --status sent --store sqlite:moved/q.sqlite
            """)
        #expect(r.lines == ["exit 0", "no d", "2"], "\(r.out) \(r.err)")
    }
}
