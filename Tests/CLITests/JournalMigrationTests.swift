import Foundation
import Testing

/// A store an older msg wrote, migrated in place to the commit journal (schema 10).
@Suite struct JournalMigrationTests {
    /// Tests/Fixtures/schema9: a schema-9 store of 300 messages as msg wrote it before
    /// the journal (its `made.sh` says how), its checkpoint, the key's public half and
    /// its counts as that msg printed them.
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Fixtures/schema9").standardized.path

    /// The first command that writes migrates it: its counts carry over (the
    /// attempts of the 120 sent messages purged before are counted still, which a
    /// recount could not give), its ledger verifies against the checkpoint signed
    /// then, it takes a write and a flush, and the ledger grown since verifies too;
    /// 6 tables are left of 10, and the claim scan's hint with them.
    @Test func aSchema9StoreKeepsItsCountsAndLedger() throws {
        let s = try Sandbox()
        let f = Self.fixture
        let r = try s.sh("""
            sqlite3 queue.sqlite < \(f)/queue.sql && cp \(f)/cp \(f)/k.pub .
            msg recover > /dev/null
            sqlite3 queue.sqlite "PRAGMA user_version; SELECT count(*) FROM sqlite_master WHERE type = 'table'; SELECT count(*) FROM kept WHERE name LIKE 'hint:%'"
            msg metrics | grep -E '^msg_(messages|attempts_total)' | sort | diff - \(f)/metrics.txt && echo counts carried
            msg ledger verify --checkpoint cp --pubkey k.pub
            msg compose --to new@example.com --body after --enqueue > /dev/null
            msg flush --transport stdout: --limit 5 > /dev/null 3> /dev/null
            msg ledger verify --checkpoint cp --pubkey k.pub
            msg metrics | grep -E '^msg_(messages{status="(queued|sent)"}|attempts_total{outcome="sent")'
            """)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.lines.prefix(4) == ["10", "6", "1", "counts carried"], "\(r.out)")
        try #require(r.lines.count == 9, "\(r.out)")
        #expect(r.lines[4].contains(#""size":687,"#) && r.lines[4].contains(#""messages":180,"removed":120,"#), "\(r.lines[4])")
        #expect(r.lines[5].contains(#""messages":181,"#) && r.lines[5].contains(#""checkpoints":1}"#), "\(r.lines[5])")
        #expect(r.lines[6...].sorted() == [
            #"msg_attempts_total{outcome="sent",code=""} 125"#, #"msg_messages{status="queued"} 165"#, #"msg_messages{status="sent"} 5"#,
        ])
    }

    /// Tests/Fixtures/json9: a JSON store of the lines msg wrote before the journal
    /// (one `$ledger` line a change; compacted once, then pairs, a counted commit and
    /// a state after it), its checkpoint, the key's public half and its counts.
    static let json9 = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Fixtures/json9").standardized.path

    /// It reads as it did (the counts from its records, the ledger against the
    /// checkpoint); the first change counts it afresh in a kept line and is one
    /// journal line; what an older msg kept and what grew since verify together;
    /// the counts then come from the journal (a purge since keeps its deliveries).
    @Test func aJSONStoreOfOlderLinesGrowsInTheNewForm() throws {
        let s = try Sandbox()
        let f = Self.json9
        let r = try s.sh("""
            export MSG_STORE=json:queue.json
            cp \(f)/queue.json \(f)/cp \(f)/k.pub . && chmod 600 queue.json
            msg metrics | grep -E '^msg_(messages|attempts_total|deliveries_total|failures_total)' | sort | diff - \(f)/metrics.txt && echo counts read
            msg ledger verify --checkpoint cp --pubkey k.pub > /dev/null && echo verified
            msg compose --to new@example.com --body after --enqueue > /dev/null
            tail -3 queue.json | sed -E 's/"[0-9a-f]{16,}"/"HEX"/g' | cut -c1-50
            msg flush --transport stdout: --limit 5 > /dev/null 3> /dev/null
            msg queue purge --status sent --older-than 0s > /dev/null 2>&1
            msg ledger verify --checkpoint cp --pubkey k.pub
            msg metrics | grep -E '^msg_(messages{status="(queued|sent)"}|attempts_total{outcome="sent")'
            """)
        #expect(r.status == 0, "\(r.err)")
        try #require(r.lines.count == 9, "\(r.out)")
        #expect(Array(r.lines.prefix(4)) == ["counts read", "verified", #"{"$ledger":"","kept":"fold","value":"HEX"}"#,
                                              #"{"$ledger":"HEX","commit":2,"effects":"HEX","rows""#], "\(r.out)")
        #expect(r.lines[4].hasPrefix(#"{"id":""#), "\(r.lines[4])")
        #expect(r.lines[5].contains(#""messages":177,"removed":127,"before_ledger":0,"checkpoints":1}"#), "\(r.lines[5])")
        #expect(r.lines[6...].sorted() == [
            #"msg_attempts_total{outcome="sent",code=""} 7"#, #"msg_messages{status="queued"} 166"#, #"msg_messages{status="sent"} 0"#,
        ], "\(r.out)")
    }
}
