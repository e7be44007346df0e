import Foundation
import MsgKit
import Testing

/// A record msg accepts is one its own transports deliver with their defaults; a
/// larger one is refused up front, naming the limit.
@Suite(.timeLimit(.minutes(3))) struct RecordLimitTests {
    /// A record 40 bytes under 1 MiB goes through `queue add`, then over `tcp://` to
    /// a default `msg listen`, into its inbox (a lease and an attempt in its history
    /// once took it over the receiver's limit, and it went dead).
    /// The JSON store holds its queue in memory, so it keeps a bounded number of
    /// records: past it, a batch is refused whole (exit 74) with the way to sqlite:.
    @Test func theJSONStoreRefusesRecordsPastItsLimitAndSaysWhereToGo() throws {
        let s = try Sandbox()
        let store = "'json:q.json?max_records=3'"
        let r = try s.sh("""
            for n in 1 2 3; do msg compose --to u$n --body b; done | msg queue add --store \(store) > /dev/null; echo "first $?"
            for n in 4 5; do msg compose --to u$n --body b; done | msg queue add --store \(store) > /dev/null; echo "more $?"
            msg queue count --store \(store)
            msg queue ls --history --store json:q.json | msg queue add --store sqlite:q.sqlite > /dev/null
            msg queue count --store sqlite:q.sqlite
            msg queue count --store 'json:q.json?max_records=0'; echo "bad $?"
            """)
        #expect(r.lines == ["first 0", "more 74", "3", "3", "bad 78"], "\(r.out)\(r.err)")
        #expect(r.err.contains("keeps at most 3 records and holds 3; nothing of this batch was stored. Move the queue to sqlite:"), "\(r.err)")
    }

    @Test func theLargestRecordAcceptedIsDeliveredOverTCP() throws {
        let s = try Sandbox()
        let listener = try ListenerProcess(s)
        let r = try s.sh("""
            head -c \((1 << 20) - 300) /dev/zero | tr '\\0' a | msg compose --to bob --body - > big.ndjson
            wc -c < big.ndjson
            msg queue add < big.ndjson > /dev/null && echo added
            msg flush --transport '\(listener.url)' > /dev/null; echo "flush $?"
            msg queue ls | grep -o '"status":"[a-z]*"'
            """)
        let size = Int(r.lines.first ?? "") ?? 0
        #expect(size > (1 << 20) - 64 && size <= 1 << 20, "\(r.lines)")
        #expect(Array(r.lines.dropFirst()) == ["added", "flush 0", #""status":"sent""#], "\(r.out)\(r.err)")
        let inbox = try FileManager.default.contentsOfDirectory(atPath: "\(s.home)/inbox/new")
        #expect(inbox.count == 1)
        _ = listener.stop()
    }

    @Test func aLargerRecordIsRefusedUpFrontNamingTheLimit() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            head -c \(1 << 20) /dev/zero | tr '\\0' a | msg compose --to bob --body - --enqueue > /dev/null; echo "compose $?"
            printf '{"to":"bob","body":"%s"}\\n' "$(head -c \((1 << 20) - 100) /dev/zero | tr '\\0' a)" | msg compose > /dev/null; echo "draft $?"
            id=$(head -c \((1 << 20) - 700) /dev/zero | tr '\\0' a | msg compose --to bob --body - --enqueue | cut -c8-43)
            msg queue edit "$id" --header "x=$(head -c 2000 /dev/zero | tr '\\0' b)"; echo "edit $?"
            msg queue count
            """)
        #expect(r.lines == ["compose 65", "draft 65", "edit 65", "1"], "\(r.out)\(r.err)")
        let limit = "over msg's limit of 1048576 bytes (1 MiB)"
        #expect(r.err.components(separatedBy: limit).count == 4, "each names the limit: \(r.err)")
        #expect(r.err.contains("msg: line 1: the record is "), "a draft's error names its line: \(r.err)")
    }
}
