import MsgKit
import NIOCore
import PostgresNIO

extension PostgresJournal {
    /// Begins the journal of a schema written before version 11, in the
    /// migration's transaction, rewriting no record: the counts kept before (with
    /// the counters of messages purged since, which a recount could not give back),
    /// or counted afresh where there were none; the hints; a first row that tells
    /// any claim scan's mark from before that anything may have changed. Then the
    /// tables it replaces go.
    static func begin(_ db: BlockingConnection, from found: Int) throws(MsgError) {
        let s = db.address.schema
        var fold = CommitFold()
        var whole = false
        if found >= 3 {
            for row in try db.query(PostgresQuery(unsafeSQL: "SELECT kind, a, b, n FROM \(s).tallies"), "carrying the counts over") {
                do {
                    let (kind, a, b, n) = try row.decode((String, String, String, Int64).self)
                    if let k = Tally.Kind(rawValue: kind) { fold.tally.add(Int(n), to: Tally.Key(k, a, b)) } else if kind == "ok" { whole = true }
                } catch {
                    throw PostgresStore.corrupt("a count", error)
                }
            }
            for row in try db.query(PostgresQuery(unsafeSQL: "SELECT deltas FROM \(s).tally_log"), "carrying the counts over") {
                guard var text = try? row.decode(String.self) else { continue }
                _ = text.withUTF8 { fold.tally.add(logText: $0) }
            }
        }
        if !whole { fold.tally = try recount(db) }
        let minutes = found >= 6
            ? "SELECT status, minute, sum(n)::int8 FROM (SELECT status, minute, n FROM \(s).created_minutes "
                + "UNION ALL SELECT status, minute, n FROM \(s).created_log) AS m GROUP BY 1, 2"
            : "SELECT status, floor(created_at / 60000.0)::int8, count(*) FROM \(s).messages GROUP BY 1, 2"
        for row in try db.query(PostgresQuery(unsafeSQL: minutes), "carrying the counts by age over") {
            do {
                let (status, minute, n) = try row.decode((String, Int64, Int64).self)
                fold.created[CreatedMinute(status: status, minute: minute), default: 0] += Int(n)
            } catch {
                throw PostgresStore.corrupt("a count by age", error)
            }
        }
        fold.prune(now: .now())
        // The rows before hold no effects: the fold has seen them all.
        let current = try db.query("SELECT pg_current_snapshot()::text", "beginning the commit journal")
        let seen: String
        do { seen = try current.first?.decode(String.self) ?? "" } catch { throw PostgresStore.corrupt("the server's snapshot", error) }
        try save(fold, seen: seen, db)
        if found >= 5 {
            try db.query(PostgresQuery(unsafeSQL: """
                INSERT INTO \(s).kept (name, value) SELECT 'hint:' || kind, convert_to(hint, 'UTF8') FROM \(s).claim_hints
                """), "carrying where the last claims stopped over")
        }
        var all = CommitEffects()
        all.floor = .all
        var framed: [UInt8] = []
        frame(all, into: &framed)
        var b = PostgresBindings(capacity: 1)
        b.append(ByteBuffer(bytes: framed))
        try db.query(PostgresQuery(unsafeSQL: appendAlone(s), binds: b), "beginning the commit journal")
        for table in replaced {
            try db.query(PostgresQuery(unsafeSQL: "DROP TABLE IF EXISTS \(s).\(table)"), "dropping \(s).\(table)")
        }
    }

    /// Counts every record afresh, a page at a time: by its stored recipient and
    /// status, and the attempts its history keeps.
    private static func recount(_ db: BlockingConnection) throws(MsgError) -> Tally {
        let s = db.address.schema
        var t = Tally()
        var after: (Int64, String)?
        while true {
            var b = PostgresBindings()
            b.append(after?.0 ?? Int64.min)
            b.append(after?.1 ?? "")
            let rows = try db.query(PostgresQuery(unsafeSQL: """
                SELECT \(StoredRow.columns) FROM \(s).messages WHERE (created_at, id) > ($1, $2)
                ORDER BY created_at, id LIMIT \(PostgresStore.page)
                """, binds: b), "counting the messages afresh")
            var n = 0
            for row in rows {
                let stored = try StoredRow(row)
                t.add(1, to: Tally.records(to: stored.to, status: stored.status))
                t.attempts(in: stored.record().message)
                after = (stored.createdAt, stored.id)
                n += 1
            }
            if n < PostgresStore.page { return t }
        }
    }
}
