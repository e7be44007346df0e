#if canImport(Glibc)
import Glibc
#endif
import MsgKit
import MsgKitTesting
import MsgSupport
import Testing

/// Large contents kept apart and written once (schema 8, `SQLitePayloads`), seen
/// in the file through the sqlite3 tool.
@Suite struct SQLitePayloadTests {
    /// A record with a body of about 4 KiB.
    static func large(_ n: Int) -> Message {
        var m = Fixtures.message(n)
        m.body = String(repeating: "four kilobytes \"of\" body, ünïcødé\n", count: 120)
        return m
    }

    /// What the sqlite3 tool prints for `sql` on the store at `path`.
    static func query(_ path: String, _ sql: String) throws -> String {
        var out = try run("sqlite3 '\(path)' \"\(sql)\"")
        while out.last == "\n" { out.removeLast() }
        return out
    }

    /// A claim to `sending` and an outcome `sent` write the row, never the content:
    /// a trigger planted in the file counts every write to `payloads`.
    @Test func aLargeContentIsWrittenOnceAndItsLifeApart() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.sqlite"
        let store = try loader.openStore("sqlite:\(path)")
        let big = Self.large(1), small = Fixtures.message(2)
        _ = try store.add([big, small])
        let text = EncodedMessage(big).json
        let cut = try #require(text.withUnsafeBufferPointer { RecordLayout.parts(of: $0, historyOffset: EncodedMessage(big).historyOffset) }?.lifeStart)
        #expect(try Self.query(path, "SELECT count(*), sum(length(CAST(content AS BLOB))) FROM payloads") == "1|\(cut)", "only the large one, its content alone")
        #expect(try Self.query(path, "SELECT content_len, length(CAST(record AS BLOB)) FROM messages ORDER BY rid") == "\(cut)|\(text.count - cut)\n0|\(EncodedMessage(small).json.count)")
        #expect(try TestProcess.sh("sqlite3 '\(path)' \"CREATE TABLE writes (n INTEGER); CREATE TRIGGER w1 AFTER UPDATE ON payloads BEGIN INSERT INTO writes VALUES (1); END; CREATE TRIGGER w2 AFTER INSERT ON payloads BEGIN INSERT INTO writes VALUES (2); END; CREATE TRIGGER w3 AFTER DELETE ON payloads BEGIN INSERT INTO writes VALUES (3); END;\"").status == 0)
        let now = Fixtures.t0.adding(.seconds(1))
        let taken = try store.claim(Query(statuses: [.queued]), limit: 10) { (m) throws(MsgError) -> Message? in
            var x = m
            try x.transition(to: .sending, event: "attempt", at: now)
            x.lease = Message.Lease(host: "h", pid: 1, until: now.adding(.seconds(60)))
            return x
        }
        #expect(taken.count == 2)
        let outcomes = try taken.map { (r) throws -> Change in
            var x = r.message
            x.lease = nil
            try x.transition(to: .sent, event: "sent", at: now)
            return Change(EncodedMessage(updating: r, to: x), expected: .sending)
        }
        #expect(try store.update(outcomes) == [true, true])
        #expect(try Self.query(path, "SELECT count(*) FROM writes") == "0", "the content was not written again")
        #expect(try store.get(big.id)?.json == outcomes[0].record.json, "read whole")
        #expect(try Self.query(path, "SELECT count(*) FROM messages WHERE status = 'sent'") == "2")
        // Removed with its record.
        #expect(try store.remove([Removal(id: big.id)]) == [true])
        #expect(try Self.query(path, "SELECT count(*) FROM payloads; SELECT group_concat(n) FROM writes") == "0\n3")
    }

    /// An edit that makes the content small takes it back into the row (and its
    /// content row goes); one that makes it large again keeps it apart again.
    @Test func anEditMovesTheContentInAndOut() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.sqlite"
        let store = try loader.openStore("sqlite:\(path)")
        var m = Self.large(1)
        _ = try store.add([m])
        m.body = "small"
        #expect(try store.update([Change(EncodedMessage(m), expected: .queued)]) == [true])
        #expect(try Self.query(path, "SELECT count(*) FROM payloads; SELECT content_len FROM messages") == "0\n0")
        #expect(try store.get(m.id)?.json == EncodedMessage(m).json)
        m.body = String(repeating: "large again ", count: 200)
        #expect(try store.update([Change(EncodedMessage(m), expected: .queued)]) == [true])
        #expect(try Self.query(path, "SELECT count(*) FROM payloads") == "1")
        #expect(try store.get(m.id)?.json == EncodedMessage(m).json)
    }

    /// A record whose content row is missing (a damaged file) reads as a damaged
    /// record, in sight with its id, never as some other text.
    @Test func aMissingContentReadsAsADamagedRecord() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.sqlite"
        let store = try loader.openStore("sqlite:\(path)")
        let big = Self.large(1)
        _ = try store.add([big, Fixtures.message(2)])
        #expect(try TestProcess.sh("sqlite3 '\(path)' 'DELETE FROM payloads'").status == 0)
        let read = try #require(try store.get(big.id))
        #expect(read.message.isDamaged, "\(String(decoding: read.json, as: UTF8.self))")
        #expect(read.message.id == big.id)
        var ids: [String] = []
        try store.list(Query()) { (r) throws(MsgError) -> Bool in ids.append(r.message.id); return true }
        #expect(ids == [big.id, Fixtures.message(2).id], "both listed")
    }

    /// A content whose bytes were zeroed in the file (a page cut short reads so) is
    /// not listed as it is behind a rest that still has msg's shape: the listing
    /// gives the damaged record in its place, a line that is JSON.
    @Test func aZeroedContentIsListedAsADamagedRecord() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.sqlite"
        let store = try loader.openStore("sqlite:\(path)")
        let big = Self.large(1)
        _ = try store.add([big])
        #expect(try TestProcess.sh("sqlite3 '\(path)' \"UPDATE payloads SET content = CAST(substr(CAST(content AS BLOB), 1, 80) || zeroblob(64) || substr(CAST(content AS BLOB), 145) AS TEXT)\"").status == 0)
        #expect(try Self.query(path, "SELECT instr(CAST(content AS BLOB), x'00') FROM payloads") == "81", "zeros planted")
        for history in [true, false] {
            var texts: [[UInt8]] = []
            try store.listJSON(Query(), includeHistory: history) { (b) throws(MsgError) -> Bool in texts.append(Array(b)); return true }
            #expect(texts.count == 1)
            #expect(!(texts.first ?? []).contains(0), "no raw NUL listed")
            let listed = try #require(texts.first)
            let read = try EncodedMessage(stored: listed, historyOffset: nil)
            #expect(read.message.isDamaged && read.message.id == big.id, "\(String(decoding: listed.prefix(120), as: UTF8.self))")
        }
    }

    /// A store of schema 7 becomes 8 without rewriting its records: a large one
    /// stays whole in its row, reads the same, and is kept apart at its next change.
    @Test func aSchema7StoreIsReadAsItIsAndSplitAtTheNextChange() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.sqlite"
        var m = Self.large(1)
        do {
            let store = try loader.openStore("sqlite:\(path)")
            _ = try store.add([Fixtures.message(2)])
        }
        // As msg 7 wrote it: no content apart, the large record whole in its row.
        let whole = EncodedMessage(m)
        let file = "\(dir)/record.json"
        let fd = try SystemCalls.open(file, O_WRONLY | O_CREAT, code: .storeIO)
        try SystemCalls.writeAll(fd, whole.json, code: .storeIO, what: file)
        close(fd)
        #expect(try TestProcess.sh("""
            sqlite3 '\(path)' "DROP TABLE payloads; ALTER TABLE messages DROP COLUMN content_len; DROP TABLE commits; DROP TABLE kept; DROP TABLE ledger_removed; \
            ALTER TABLE messages DROP COLUMN ledger; ALTER TABLE messages DROP COLUMN history_n; ALTER TABLE messages DROP COLUMN content_fp; PRAGMA user_version = 7; \
            INSERT INTO messages (id, status, recipient, created_at, updated_at, open, record, history_at) \
            VALUES ('\(m.id)', 'queued', '\(m.to)', \(m.createdAt.milliseconds), \(m.updatedAt.milliseconds), 1, CAST(readfile('\(file)') AS TEXT), \(whole.historyOffset))"
            """).status == 0)
        let store = try loader.openStore("sqlite:\(path)")
        #expect(try Self.query(path, "PRAGMA user_version; SELECT count(*) FROM payloads") == "10\n0")
        #expect(try store.get(m.id)?.json == whole.json, "read as it was stored")
        var listed: [[UInt8]] = []
        try store.listJSON(Query(), includeHistory: true) { (b) throws(MsgError) -> Bool in listed.append(Array(b)); return true }
        #expect(listed.contains(whole.json))
        m.notBefore = Fixtures.t0
        let changed = EncodedMessage(updating: whole, to: m)
        #expect(try store.update([Change(changed, expected: .queued)]) == [true])
        #expect(try Self.query(path, "SELECT count(*) FROM payloads") == "1", "kept apart at its first change")
        #expect(try store.get(m.id)?.json == changed.json)
    }
}
