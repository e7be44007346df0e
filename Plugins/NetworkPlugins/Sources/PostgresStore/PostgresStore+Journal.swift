import MsgKit
import NIOCore
import PostgresNIO

/// The commit journal (``PostgresJournal``), from which MsgKit makes the counts,
/// floors, hints and ledger (``JournalStore``; the ledger's reads are in
/// ``PostgresStore+Ledger.swift``).
extension PostgresStore: JournalStore {
    /// After a statement that appended journal row `commit` with `bytes` of effects:
    /// folds when it is a 512th or this handle has appended 2 MiB since its last
    /// fold, now or, inside a transaction, after its commit.
    func appended(_ commit: Int64?, bytes: Int) throws(MsgError) {
        guard let commit else { return }
        appendedBytes += bytes
        guard commit % CommitFold.foldEvery == 0 || appendedBytes >= CommitFold.foldBytes else { return }
        appendedBytes = 0
        if inTransaction { foldAfterCommit = true } else { try PostgresJournal.fold(db) }
    }

    public func journalFold<R>(_ body: (CommitFold?) throws(MsgError) -> R) throws(MsgError) -> R {
        try snapshot("reading the counts") { () throws(MsgError) -> R in try body(try PostgresJournal.read(db)) }
    }

    public func openCounts(now: Timestamp, excluding excluded: Set<String>) throws(MsgError) -> OpenCounts {
        var open = OpenCounts()
        var b = PostgresBindings()
        b.append(now.milliseconds)
        for row in try db.query(PostgresQuery(unsafeSQL: """
            SELECT recipient, count(*) FROM \(table) WHERE due_at > $1 AND status IN ('queued', 'failed') GROUP BY recipient
            """, binds: b), "counting the messages not yet due") {
            guard let (to, n) = try? row.decode((String, Int64).self) else { continue }
            open.notYetDue[to] = Int(n)
        }
        for row in try db.query(PostgresQuery(unsafeSQL: "SELECT recipient, count(*) FROM \(table) WHERE status = 'sending' GROUP BY recipient"),
                                "counting the messages in flight") {
            guard let (to, n) = try? row.decode((String, Int64).self) else { continue }
            open.inFlight[to] = Int(n)
        }
        var o = PostgresBindings()
        o.append(now.milliseconds)
        o.append(excluded.sorted())
        // Per status, so each reads the status index in FIFO order and stops at the first.
        let rows = try db.query(PostgresQuery(unsafeSQL: """
            SELECT min(c) FROM (
                (SELECT created_at AS c FROM \(table) WHERE status = 'queued' AND (due_at IS NULL OR due_at <= $1)
                    AND recipient NOT IN (SELECT unnest($2::text[])) ORDER BY created_at, id LIMIT 1)
                UNION ALL
                (SELECT created_at FROM \(table) WHERE status = 'failed' AND (due_at IS NULL OR due_at <= $1)
                    AND recipient NOT IN (SELECT unnest($2::text[])) ORDER BY created_at, id LIMIT 1)) AS heads
            """, binds: o), "reading the oldest due message")
        open.oldestDue = rows.first.flatMap { try? $0.decode(Int64?.self) }.map { Timestamp(milliseconds: $0) }
        return open
    }

    public func createdCounts(after start: Timestamp, before end: Timestamp) throws(MsgError) -> [String: Int] {
        var p = PostgresBindings()
        p.append(start.milliseconds)
        p.append(end.milliseconds)
        var out: [String: Int] = [:]
        for row in try db.query(PostgresQuery(unsafeSQL: """
            SELECT status, count(*) FROM \(table) WHERE created_at > $1 AND created_at < $2 GROUP BY status
            """, binds: p), "counting messages by age") {
            guard let (status, n) = try? row.decode((String, Int64).self) else { continue }
            out[status] = Int(n)
        }
        return out
    }

    /// In one statement (one snapshot): its `xmin`, the next mark, and the rows at
    /// or above `mark`, at most `limit`.
    public func journalFloors(since mark: Int64?, limit: Int) throws(MsgError) -> (mark: Int64, floors: [CommitEffects.Floor?]?) {
        var b = PostgresBindings(capacity: 1)
        b.append(mark ?? Int64.max)
        let rows = try db.query(PostgresQuery(unsafeSQL: """
            SELECT x.h, c.effects FROM (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS h) AS x
            LEFT JOIN LATERAL (SELECT effects FROM \(db.address.schema).commits WHERE xid >= $1 AND effects IS NOT NULL
                               LIMIT \(limit + 1)) AS c ON true
            """, binds: b), "reading where the queue changed")
        var newest: Int64 = 0
        var floors: [CommitEffects.Floor?] = []
        var read = 0
        for row in rows {
            read += 1
            let framed: ByteBuffer?
            do { (newest, framed) = try row.decode((Int64, ByteBuffer?).self) } catch { throw Self.corrupt("where the queue changed", error) }
            guard let framed else { continue }
            if !PostgresJournal.pieces(framed, { floors.append(CommitEffects.floor(ofJournal: $0)) }) { floors.append(nil) }
        }
        // Far behind: anything may have changed, without reading thousands of rows.
        if read > limit { return (newest, nil) }
        return (newest, floors)
    }

    public func kept(_ name: String) throws(MsgError) -> [UInt8]? {
        var b = PostgresBindings()
        b.append(name)
        let rows = try db.query(PostgresQuery(unsafeSQL: "SELECT value FROM \(db.address.schema).kept WHERE name = $1", binds: b),
                                "reading a value kept beside the journal")
        guard let row = rows.first else { return nil }
        do { return Array(buffer: try row.decode(ByteBuffer.self)) } catch { throw Self.corrupt("a value kept beside the journal", error) }
    }

    /// A statement of its own, not a change of the queue: no journal row.
    public func keep(_ name: String, _ value: [UInt8]) throws(MsgError) {
        try writable()
        try PostgresJournal.keep(name, value, db)
    }
}
