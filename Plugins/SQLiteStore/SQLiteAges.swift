import MsgKit

/// Records by status and the minute they were created (schema 6), kept in the same
/// transaction as each change (``SQLiteStore/counted(_:_:)``), so `msg queue stats`
/// reads no record (``StoreCounting``).
///
/// `created_minutes` has one row per status and minute with records in it, for the
/// last ``kept`` minutes: the oldest age `queue stats` tells apart is 7 days, and
/// what is older comes from the status's total in the ``Tally``. A commit adds its
/// deltas with an upsert each: a batch's records were created close together, so a
/// commit touches a few rows of a small table (a flush of 100,000 to 5,000
/// recipients: 1-2% more time). Rows past ``kept`` are dropped when the tally log
/// is folded. A reader sums the minutes after each time asked for and counts the
/// records of the minute the time falls in through `messages_fifo`.
enum SQLiteAges {
    static let table = """
        CREATE TABLE created_minutes (
            status TEXT NOT NULL,
            minute INTEGER NOT NULL,
            n INTEGER NOT NULL,
            PRIMARY KEY (status, minute)
        ) WITHOUT ROWID;
        """

    /// The minutes kept: eight days, one more than the oldest bucket of `queue stats`.
    static let kept: Int64 = 8 * 24 * 60

    /// The minute `ms` falls in (``CreatedMinute/minute(of:)``).
    static func minute(_ ms: Int64) -> Int64 { CreatedMinute.minute(of: Timestamp(milliseconds: ms)) }

    /// Adds a commit's deltas (``CommitEffects/created``) to the table, in the caller's transaction.
    static func apply(_ deltas: [CreatedMinute: Int], _ db: SQLiteDatabase) throws(MsgError) {
        if deltas.isEmpty { return }
        let upsert = try db.statement("""
            INSERT INTO created_minutes (status, minute, n) VALUES (?1, ?2, ?3)
            ON CONFLICT (status, minute) DO UPDATE SET n = n + ?3
            """)
        for (key, n) in deltas where n != 0 {
            upsert.reset()
            upsert.bind(1, key.status)
            upsert.bind(2, key.minute)
            upsert.bind(3, Int64(n))
            try upsert.run("counting messages by age")
        }
    }

    /// Drops the minutes older than ``kept`` and the empty ones.
    static func prune(_ db: SQLiteDatabase, now: Timestamp) throws(MsgError) {
        let s = try db.statement("DELETE FROM created_minutes WHERE minute < ?1 OR n = 0")
        s.bind(1, minute(now.milliseconds) - kept)
        try s.run("counting messages by age")
    }

    /// Counts the records of the last ``kept`` minutes afresh, in the caller's transaction.
    static func rebuild(_ db: SQLiteDatabase, now: Timestamp) throws(MsgError) {
        let s = try db.statement("""
            INSERT INTO created_minutes (status, minute, n)
            SELECT status, CASE WHEN created_at >= 0 THEN created_at / 60000 ELSE -((59999 - created_at) / 60000) END AS m, count(*)
            FROM messages WHERE created_at >= ?1 GROUP BY status, m
            """)
        s.bind(1, (minute(now.milliseconds) - kept) * 60_000)
        try db.execute("DELETE FROM created_minutes", "counting messages by age")
        try s.run("counting messages by age")
    }

    /// Per status, the records created after each of `times`: the minutes after the
    /// one a time falls in, from the table, and that minute's records after it, from
    /// `messages_fifo`; then the status's total, from `tally`. Nil for a time older
    /// than the table keeps.
    static func created(after times: [Timestamp], _ db: SQLiteDatabase, tally: Tally, now: Timestamp) throws(MsgError) -> [String: [Int]]? {
        let oldest = minute(now.milliseconds) - kept
        guard let first = times.map({ minute($0.milliseconds) }).min(), first > oldest else { return nil }
        var out: [String: [Int]] = [:]
        let zero = Array(repeating: 0, count: times.count + 1)
        tally.forEach { (key: Tally.Key, n: Int) in
            if key.kind == .messages { out[key.b, default: zero][times.count] += n }
        }
        let rows = try db.statement("SELECT status, minute, n FROM created_minutes WHERE minute > ?1")
        rows.bind(1, first)
        while try rows.step("counting messages by age") {
            let status = String(decoding: rows.bytes(0), as: UTF8.self)
            let m = rows.int64(1), n = Int(rows.int64(2))
            for (i, t) in times.enumerated() where m > minute(t.milliseconds) {
                out[status, default: zero][i] += n
            }
        }
        rows.reset()
        let partial = try db.statement("""
            SELECT status, count(*) FROM messages INDEXED BY messages_fifo WHERE created_at > ?1 AND created_at < ?2 GROUP BY status
            """)
        for (i, t) in times.enumerated() {
            partial.reset()
            partial.bind(1, t.milliseconds)
            partial.bind(2, (minute(t.milliseconds) + 1) * 60_000)
            while try partial.step("counting messages by age") {
                out[String(decoding: partial.bytes(0), as: UTF8.self), default: zero][i] += Int(partial.int64(1))
            }
        }
        partial.reset()
        return out
    }
}

extension SQLiteStore: StoreCounting {
    public func created(after times: [Timestamp]) throws(MsgError) -> [String: [Int]]? {
        try guarded { () throws(MsgError) -> [String: [Int]]? in
            // The tally and the minutes in one snapshot; nil with the tally when it is
            // not whole (a salvage killed midway leaves neither).
            try db.snapshot("counting messages by age") { () throws(MsgError) -> [String: [Int]]? in
                guard let tally = try SQLiteTally.read(db) else { return nil }
                return try SQLiteAges.created(after: times, db, tally: tally, now: .now())
            }
        }
    }
}
