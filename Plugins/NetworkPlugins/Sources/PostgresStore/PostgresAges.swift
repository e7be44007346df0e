import MsgKit
import PostgresNIO

/// Records by status and the minute they were created (schema 6), so `msg queue
/// stats` reads no record (``StoreCounting``), as in the SQLite store.
///
/// Workers on several hosts change records at once, so no statement updates a
/// shared counter row (they would queue on its lock): each statement that writes
/// records appends what the recorder said its rows moved, per status and minute
/// (``RowEffects``), to `created_log`, in its own commit; the fold of the counts (``PostgresTally/fold(_:upTo:)``) moves the
/// log into `created_minutes` and drops the minutes older than ``kept``. A reader,
/// in one snapshot, takes the totals from the tally, sums the minutes and the log
/// after the minute an edge falls in, and counts that minute's records after the
/// edge through `messages_fifo`.
enum PostgresAges {
    static func tables(_ s: String) -> [String] {
        [
            "CREATE TABLE \(s).created_minutes (status text NOT NULL, minute bigint NOT NULL, n bigint NOT NULL, PRIMARY KEY (status, minute))",
            "CREATE TABLE \(s).created_log (status text NOT NULL, minute bigint NOT NULL, n bigint NOT NULL)",
        ]
    }

    /// The minutes kept: eight days, one more than the oldest bucket of `queue stats`.
    static let kept: Int64 = 8 * 24 * 60

    /// SQL: the minute of the `created_at` in `column` (rounded down, also before 1970).
    static func minute(_ column: String) -> String { "floor(\(column) / 60000.0)::bigint" }

    /// The minute `ms` falls in (``CreatedMinute/minute(of:)``).
    static func minute(_ ms: Int64) -> Int64 { CreatedMinute.minute(of: Timestamp(milliseconds: ms)) }

    /// Moves the log into `created_minutes` and drops the empty minutes and those
    /// older than ``kept``, in the caller's transaction (the fold's). Two folding at
    /// once: the second waits for the first's row locks and then finds the rows gone.
    static func fold(_ db: BlockingConnection, now: Timestamp) throws(MsgError) {
        let s = db.address.schema
        try db.query(PostgresQuery(unsafeSQL: """
            WITH gone AS (DELETE FROM \(s).created_log RETURNING status, minute, n)
            INSERT INTO \(s).created_minutes (status, minute, n) SELECT status, minute, sum(n) FROM gone GROUP BY 1, 2
            ON CONFLICT (status, minute) DO UPDATE SET n = \(s).created_minutes.n + excluded.n
            """), "counting messages by age")
        var b = PostgresBindings()
        b.append(minute(now.milliseconds) - kept)
        try db.query(PostgresQuery(unsafeSQL: "DELETE FROM \(s).created_minutes WHERE n = 0 OR minute < $1", binds: b),
                     "counting messages by age")
    }

    /// Counts the records of the last ``kept`` minutes afresh, in the caller's transaction.
    static func rebuild(_ db: BlockingConnection, now: Timestamp) throws(MsgError) {
        let s = db.address.schema
        try db.query(PostgresQuery(unsafeSQL: "DELETE FROM \(s).created_minutes"), "counting messages by age")
        try db.query(PostgresQuery(unsafeSQL: "DELETE FROM \(s).created_log"), "counting messages by age")
        var b = PostgresBindings()
        b.append((minute(now.milliseconds) - kept) * 60_000)
        try db.query(PostgresQuery(unsafeSQL: """
            INSERT INTO \(s).created_minutes (status, minute, n)
            SELECT status, \(minute("created_at")), count(*) FROM \(s).messages WHERE created_at >= $1 GROUP BY 1, 2
            """, binds: b), "counting messages by age")
    }

    /// ``StoreCounting/created(after:)``: nil for a time older than the minutes kept,
    /// or when the counts are not whole.
    static func created(after times: [Timestamp], _ db: BlockingConnection, now: Timestamp) throws(MsgError) -> [String: [Int]]? {
        let oldest = minute(now.milliseconds) - kept
        guard let first = times.map({ minute($0.milliseconds) }).min(), first > oldest else { return nil }
        let s = db.address.schema
        return try db.transaction("counting messages by age") { () throws(MsgError) -> [String: [Int]]? in
            try db.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", "counting messages by age")
            guard let tally = try PostgresTally.readInTransaction(db) else { return nil }
            var out: [String: [Int]] = [:]
            let zero = Array(repeating: 0, count: times.count + 1)
            tally.forEach { (key: Tally.Key, n: Int) in
                if key.kind == .messages { out[key.b, default: zero][times.count] += n }
            }
            var b = PostgresBindings()
            b.append(first)
            let rows = try db.query(PostgresQuery(unsafeSQL: """
                SELECT status, minute, sum(n)::int8 FROM (
                    SELECT status, minute, n FROM \(s).created_minutes WHERE minute > $1
                    UNION ALL SELECT status, minute, n FROM \(s).created_log WHERE minute > $1) AS m
                GROUP BY 1, 2
                """, binds: b), "counting messages by age")
            for row in rows {
                guard let (status, m, n) = try? row.decode((String, Int64, Int64).self) else {
                    throw PostgresStore.corrupt("a count by age", MsgError(.corrupt, "a row of created_minutes"))
                }
                for (i, t) in times.enumerated() where m > minute(t.milliseconds) {
                    out[status, default: zero][i] += Int(n)
                }
            }
            for (i, t) in times.enumerated() {
                var p = PostgresBindings()
                p.append(t.milliseconds)
                p.append((minute(t.milliseconds) + 1) * 60_000)
                for row in try db.query(PostgresQuery(unsafeSQL: """
                    SELECT status, count(*) FROM \(s).messages WHERE created_at > $1 AND created_at < $2 GROUP BY status
                    """, binds: p), "counting messages by age") {
                    guard let (status, n) = try? row.decode((String, Int64).self) else { continue }
                    out[status, default: zero][i] += Int(n)
                }
            }
            return out
        }
    }
}

extension PostgresStore: StoreCounting {
    public func created(after times: [Timestamp]) throws(MsgError) -> [String: [Int]]? {
        try PostgresAges.created(after: times, db, now: .now())
    }
}
