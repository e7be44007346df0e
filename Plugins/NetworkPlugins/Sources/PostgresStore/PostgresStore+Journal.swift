import MsgKit
import NIOCore
import PostgresNIO

/// Counts and floors, each read from the commit journal (``PostgresJournal``).
extension PostgresStore: StoreCounting, ChangeFloors {
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

    public func counts(now: Timestamp, excluding excluded: Set<String>) throws(MsgError) -> StoreCounts? {
        guard let fold = try snapshot("reading the counts", { () throws(MsgError) in try PostgresJournal.read(db) }) else { return nil }
        var notYetDue: [String: Int] = [:]
        var b = PostgresBindings()
        b.append(now.milliseconds)
        for row in try db.query(PostgresQuery(unsafeSQL: """
            SELECT recipient, count(*) FROM \(table) WHERE due_at > $1 AND status IN ('queued', 'failed') GROUP BY recipient
            """, binds: b), "counting the messages not yet due") {
            guard let (to, n) = try? row.decode((String, Int64).self) else { continue }
            notYetDue[to] = Int(n)
        }
        var inFlight: [String: Int] = [:]
        for row in try db.query(PostgresQuery(unsafeSQL: "SELECT recipient, count(*) FROM \(table) WHERE status = 'sending' GROUP BY recipient"),
                                "counting the messages in flight") {
            guard let (to, n) = try? row.decode((String, Int64).self) else { continue }
            inFlight[to] = Int(n)
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
        let oldest = rows.first.flatMap { try? $0.decode(Int64?.self) }.map { Timestamp(milliseconds: $0) }
        return StoreCounts(tally: fold.tally, notYetDue: notYetDue, inFlight: inFlight, oldestDue: oldest)
    }

    /// The fold and the records of each edge's own minute, in one snapshot.
    public func created(after times: [Timestamp]) throws(MsgError) -> [String: [Int]]? {
        try snapshot("counting messages by age") { () throws(MsgError) -> [String: [Int]]? in
            guard let fold = try PostgresJournal.read(db) else { return nil }
            return try fold.created(after: times, now: .now()) { (t) throws(MsgError) -> [String: Int] in
                var p = PostgresBindings()
                p.append(t.milliseconds)
                p.append((CreatedMinute.minute(of: t) + 1) * 60_000)
                var out: [String: Int] = [:]
                for row in try db.query(PostgresQuery(unsafeSQL: """
                    SELECT status, count(*) FROM \(table) WHERE created_at > $1 AND created_at < $2 GROUP BY status
                    """, binds: p), "counting messages by age") {
                    guard let (status, n) = try? row.decode((String, Int64).self) else { continue }
                    out[status] = Int(n)
                }
                return out
            }
        }
    }

    /// In one statement (one snapshot): its `xmin`, the next mark, and the rows at
    /// or above `mark`, at most ``PostgresJournal/floorRows``.
    public func changeFloor(since mark: Int64?) throws(MsgError) -> ChangeFloor {
        var b = PostgresBindings(capacity: 1)
        b.append(mark ?? Int64.max)
        let rows = try db.query(PostgresQuery(unsafeSQL: """
            SELECT x.h, c.effects FROM (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS h) AS x
            LEFT JOIN LATERAL (SELECT effects FROM \(db.address.schema).commits WHERE xid >= $1 AND effects IS NOT NULL
                               LIMIT \(PostgresJournal.floorRows + 1)) AS c ON true
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
        if read > PostgresJournal.floorRows { return ChangeFloor(mark: newest, floor: .all) }
        return CommitFold.floor(since: mark, newest: newest, floors)
    }

    public func scanHint(_ kind: String) throws(MsgError) -> String? {
        var b = PostgresBindings()
        b.append("hint:" + kind)
        let rows = try db.query(PostgresQuery(unsafeSQL: "SELECT value FROM \(db.address.schema).kept WHERE name = $1", binds: b),
                                "reading where the last claim stopped")
        guard let row = rows.first else { return nil }
        do { return String(buffer: try row.decode(ByteBuffer.self)) } catch { throw Self.corrupt("where the last claim stopped", error) }
    }

    /// A statement of its own, not a change of the queue: no journal row.
    public func saveScanHint(_ kind: String, _ hint: String) throws(MsgError) {
        try writable()
        try PostgresJournal.keep("hint:" + kind, Array(hint.utf8), db)
    }
}
