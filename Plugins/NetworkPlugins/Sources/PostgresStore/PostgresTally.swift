import MsgKit
import PostgresNIO

/// The store's ``Tally`` (schema 3), as in the SQLite store: each statement that
/// changes records appends one `tally_log` row with the deltas of the rows it
/// changed, in the same statement (a data-modifying CTE), so the counts commit with
/// the change and never for a change that did not apply. Appends never wait for
/// each other, so workers on several hosts do not queue on a counter row; every
/// ``foldEvery`` log rows, the writer that appended the last folds the log into
/// `tallies` in a transaction of its own, as does a writer that appended
/// ``foldBytes`` of log text since its last fold (a reader parses the log). A reader adds the two. A row
/// `('ok', '', '', 1)` says they are whole (written by the migration that counted
/// what the queue held).
///
/// What each row's change moves is the recorder's (``ChangeRecorder``, ``RowEffects``):
/// the statement adds up the log text of the rows it changed.
enum PostgresTally {
    static func tables(_ s: String) -> [String] {
        [
            "CREATE TABLE \(s).tallies (kind text NOT NULL, a text NOT NULL, b text NOT NULL, n bigint NOT NULL, PRIMARY KEY (kind, a, b))",
            "CREATE TABLE \(s).tally_log (seq bigserial PRIMARY KEY, deltas text NOT NULL)",
        ]
    }

    /// How many log rows are folded into `tallies` at once.
    static let foldEvery: Int64 = 512
    /// How much log text one handle appends before it folds (a reader parses the log).
    static let foldBytes = 2 << 20

    /// SQL: appends one log row with the text of `deltas` (an expression over the
    /// rows of CTE `source`) when it is not empty, returning its seq.
    static func append(_ s: String, _ deltas: String, from source: String) -> String {
        """
        INSERT INTO \(s).tally_log (deltas)
            SELECT string_agg(\(deltas), '') FROM \(source) HAVING coalesce(string_agg(\(deltas), ''), '') <> ''
            RETURNING seq, octet_length(deltas) AS bytes
        """
    }

    /// The figures, or nil when they are not whole.
    static func read(_ db: BlockingConnection) throws(MsgError) -> Tally? {
        try db.transaction("reading the counts") { () throws(MsgError) -> Tally? in
            try db.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", "reading the counts")
            return try readInTransaction(db)
        }
    }

    /// The figures, or nil when they are not whole, in the caller's transaction.
    static func readInTransaction(_ db: BlockingConnection) throws(MsgError) -> Tally? {
        let s = db.address.schema
        var t = Tally()
        var whole = false
        for row in try db.query(PostgresQuery(unsafeSQL: "SELECT kind, a, b, n FROM \(s).tallies"), "reading the counts") {
            do {
                let (kind, a, b, n) = try row.decode((String, String, String, Int64).self)
                if let k = Tally.Kind(rawValue: kind) { t.add(Int(n), to: Tally.Key(k, a, b)) } else if kind == "ok" { whole = true }
            } catch {
                throw PostgresStore.corrupt("a count", error)
            }
        }
        guard whole else { return nil }
        for row in try db.query(PostgresQuery(unsafeSQL: "SELECT deltas FROM \(s).tally_log"), "reading the counts") {
            guard var text = try? row.decode(String.self) else { continue }
            text.withUTF8 { t.add(logText: $0) }
        }
        return t
    }

    /// Folds the log rows up to `seq` into `tallies`, in a transaction of its own.
    /// Two writers folding at once: the second waits for the first's row locks and
    /// then finds the rows gone.
    static func fold(_ db: BlockingConnection, upTo seq: Int64) throws(MsgError) {
        let s = db.address.schema
        try db.transaction("folding the counts") { () throws(MsgError) in
            var b = PostgresBindings()
            b.append(seq)
            var t = Tally()
            for row in try db.query(PostgresQuery(unsafeSQL: "DELETE FROM \(s).tally_log WHERE seq <= $1 RETURNING deltas", binds: b),
                                    "folding the counts") {
                guard var text = try? row.decode(String.self) else { continue }
                text.withUTF8 { t.add(logText: $0) }
            }
            try upsert(t, db)
            try PostgresAges.fold(db, now: .now())
        }
    }

    /// Adds each figure of `t` to its row of `tallies`, then drops the record counts
    /// that reached zero (one range of the key, once a fold).
    static func upsert(_ t: Tally, _ db: BlockingConnection) throws(MsgError) {
        let s = db.address.schema
        var kinds: [String] = [], a: [String] = [], bs: [String] = [], n: [Int64] = []
        t.forEach { (key, v) in
            kinds.append(key.kind.rawValue); a.append(key.a); bs.append(key.b); n.append(Int64(v))
        }
        if kinds.isEmpty { return }
        var b = PostgresBindings()
        b.append(kinds); b.append(a); b.append(bs); b.append(n)
        try db.query(PostgresQuery(unsafeSQL: """
            INSERT INTO \(s).tallies (kind, a, b, n) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[])
            ON CONFLICT (kind, a, b) DO UPDATE SET n = \(s).tallies.n + excluded.n
            """, binds: b), "counting messages")
        try db.query(PostgresQuery(unsafeSQL: "DELETE FROM \(s).tallies WHERE kind = 'm' AND n = 0"), "counting messages")
    }

    /// Counts every record afresh, in the caller's transaction (the migration's):
    /// by stored recipient and status, and the attempts each history keeps.
    static func rebuild(_ db: BlockingConnection) throws(MsgError) {
        let s = db.address.schema
        try db.query(PostgresQuery(unsafeSQL: "DELETE FROM \(s).tallies"), "counting the messages afresh")
        try db.query(PostgresQuery(unsafeSQL: "DELETE FROM \(s).tally_log"), "counting the messages afresh")
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
            if n < PostgresStore.page { break }
        }
        try upsert(t, db)
        try db.query(PostgresQuery(unsafeSQL: "INSERT INTO \(s).tallies (kind, a, b, n) VALUES ('ok', '', '', 1)"), "counting the messages afresh")
    }
}

extension PostgresStore {
    /// After a statement that appended a log row (its seq and size): folds when it is
    /// the last of a ``PostgresTally/foldEvery`` or this handle has appended
    /// ``PostgresTally/foldBytes`` since its last fold, now or, inside a
    /// transaction, after its commit.
    func appended(_ log: (seq: Int64, bytes: Int32)?) throws(MsgError) {
        guard let log else { return }
        loggedBytes += Int(log.bytes)
        guard log.seq % PostgresTally.foldEvery == 0 || loggedBytes >= PostgresTally.foldBytes else { return }
        loggedBytes = 0
        if inTransaction { foldAfterCommit = log.seq } else { try PostgresTally.fold(db, upTo: log.seq) }
    }

    public func counts(now: Timestamp, excluding excluded: Set<String>) throws(MsgError) -> StoreCounts? {
        guard let tally = try PostgresTally.read(db) else { return nil }
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
        return StoreCounts(tally: tally, notYetDue: notYetDue, inFlight: inFlight, oldestDue: oldest)
    }
}
