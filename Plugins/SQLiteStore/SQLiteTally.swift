import MsgKit

/// The store's ``Tally`` (schema 5; its companion by age, ``SQLiteAges``, schema 6),
/// kept in the same transaction as the changes it counts
/// (``SQLiteStore/counted(_:_:)``), in two tables:
/// - `tally_log`: one row appended per commit that moves a figure, holding all of
///   that commit's deltas (``Tally/logText(into:)``). An append writes the last page of one
///   b-tree, however many recipients the commit touched;
/// - `tallies`: one row per figure, into which the log is folded (and emptied) in
///   the commit that appends its ``foldEvery``th row, or when the log text this
///   handle appended since its last fold passes ``foldBytes``: a reader parses what
///   is in the log, so it stays short (a million records added to 5,000 recipients
///   left 17 MB of log: 140 ms for each `msg metrics`; 20 ms with the bound at
///   2 MiB, which costs the flush and `queue add` 2-3% more folding than 512 rows
///   alone; at 256 KiB they folded so often that they took 1.5-1.7x as long).
/// A reader adds the log to the table (``read(_:)``). A row `('ok', '', '', 1)` in
/// `tallies` says they are whole: it is written with them (``rebuild(_:)``), and a
/// store without it (one carried over from a damaged file by a process that was
/// killed) counts afresh when next opened for writing; until then ``read(_:)`` is nil
/// and msg reads the records instead.
///
/// Measured (flush of 100,000 to the mock, 5,000 recipients, against no counting):
/// an upsert per figure per commit cost 2.4x the flush, as each batch of 64
/// recipients dirtied pages all over `tallies`; counting in SQL triggers doubled the
/// SQLite work of the flush alone (two upserts per status change).
enum SQLiteTally {
    static let tables = """
        CREATE TABLE tallies (
            kind TEXT NOT NULL,
            a TEXT NOT NULL,
            b TEXT NOT NULL,
            n INTEGER NOT NULL,
            PRIMARY KEY (kind, a, b)
        ) WITHOUT ROWID;
        CREATE TABLE tally_log (seq INTEGER PRIMARY KEY, deltas TEXT NOT NULL);
        """

    /// How many log rows are folded into `tallies` at once.
    static let foldEvery: Int64 = 512
    /// How much log text one handle appends before it folds.
    static let foldBytes = 2 << 20

    /// Adds `t` to the counts, in the caller's transaction: a log row, and the fold
    /// when it falls due (``foldEvery``, or ``foldBytes`` of text counted in `logged`).
    static func apply(_ t: Tally, _ db: SQLiteDatabase, logged: inout Int) throws(MsgError) {
        if t.isEmpty { return }
        let append = try db.statement("INSERT INTO tally_log (deltas) VALUES (?1) RETURNING seq")
        var text: [UInt8] = []
        t.logText(into: &text)
        defer { append.reset() }
        let seq = try text.withUnsafeBufferPointer { (b) throws(MsgError) -> Int64? in
            append.bindStatic(1, b)
            guard try append.step("counting messages") else { return nil }
            let seq = append.int64(0)
            append.reset()
            return seq
        }
        logged += text.count
        if let seq, seq % foldEvery == 0 || logged >= foldBytes {
            try fold(db)
            logged = 0
        }
    }

    /// Folds the log into `tallies`. A record count that reaches zero leaves the
    /// table, so recipients long gone cost no reading.
    static func fold(_ db: SQLiteDatabase) throws(MsgError) {
        try upsert(try log(db), db)
        try db.execute("DELETE FROM tally_log", "counting messages")
        try SQLiteAges.prune(db, now: .now())
    }

    /// The deltas of the log rows, summed.
    private static func log(_ db: SQLiteDatabase) throws(MsgError) -> Tally {
        let s = try db.statement("SELECT deltas FROM tally_log")
        defer { s.reset() }
        var t = Tally()
        while try s.step("reading the counts") { t.add(logText: s.bytes(0)) }
        return t
    }

    /// Adds each figure of `t` to its row of `tallies`; record counts that reach zero
    /// leave the table (one range of its key, once a fold).
    private static func upsert(_ t: Tally, _ db: SQLiteDatabase) throws(MsgError) {
        if t.isEmpty { return }
        let upsert = try db.statement("""
            INSERT INTO tallies (kind, a, b, n) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (kind, a, b) DO UPDATE SET n = n + excluded.n
            """)
        try t.forEach { (key, n) throws(MsgError) in
            upsert.reset()
            upsert.bind(1, key.kind.rawValue)
            upsert.bind(2, key.a)
            upsert.bind(3, key.b)
            upsert.bind(4, Int64(n))
            try upsert.run("counting messages")
        }
        try db.execute("DELETE FROM tallies WHERE kind = 'm' AND n = 0", "counting messages")
    }

    /// The figures, or nil when the table is not whole: the table and the log read
    /// by one statement, so in one snapshot (a fold committed between two reads would
    /// move deltas from the log into the table unseen).
    static func read(_ db: SQLiteDatabase) throws(MsgError) -> Tally? {
        let s = try db.statement("SELECT kind, a, b, n, NULL FROM tallies UNION ALL SELECT NULL, NULL, NULL, NULL, deltas FROM tally_log")
        defer { s.reset() }
        var t = Tally()
        var whole = false
        while try s.step("reading the counts") {
            if s.isNull(0) {
                t.add(logText: s.bytes(4))
                continue
            }
            let kind = String(decoding: s.bytes(0), as: UTF8.self)
            guard let k = Tally.Kind(rawValue: kind) else {
                if kind == "ok" { whole = true }
                continue
            }
            t.add(Int(s.int64(3)), to: Tally.Key(k, String(decoding: s.bytes(1), as: UTF8.self), String(decoding: s.bytes(2), as: UTF8.self)))
        }
        return whole ? t : nil
    }

    /// Whether the table is whole.
    static func isWhole(_ db: SQLiteDatabase) throws(MsgError) -> Bool {
        try db.integer("SELECT count(*) FROM tallies WHERE kind = 'ok'") > 0
    }

    /// Counts every record afresh, in the caller's transaction: each record by its
    /// stored recipient and status, and the attempts its history keeps (a damaged
    /// record's text keeps none that reads).
    static func rebuild(_ db: SQLiteDatabase) throws(MsgError) {
        try db.execute("DELETE FROM tallies; DELETE FROM tally_log", "counting the messages afresh")
        let s = try db.statement("SELECT \(Row.columns) FROM messages")
        var t = Tally()
        var batch: [Row.Copy] = []
        func count() {
            for (row, r) in zip(batch, SQLiteStore.decodeAll(batch)) {
                t.add(1, to: Tally.records(to: row.to, status: row.status))
                t.attempts(in: r.message)
            }
            batch.removeAll(keepingCapacity: true)
        }
        while try s.step("counting the messages afresh") {
            batch.append(Row(s).copy())
            if batch.count >= 4096 { count() }
        }
        s.reset()
        count()
        try upsert(t, db)
        try SQLiteAges.rebuild(db, now: .now())
        try db.execute("INSERT INTO tallies (kind, a, b, n) VALUES ('ok', '', '', 1)", "counting the messages afresh")
    }
}

extension SQLiteStore {
    /// `db.transaction` that also stores, before the commit, what the changes `body`
    /// makes mean beside their rows, as ``recorder`` decided: the ``Tally``'s deltas,
    /// the counts by creation minute (``SQLiteAges``), the floor (``SQLiteFloors``)
    /// and the leaves (``SQLiteLedger``).
    func counted<R>(_ what: String, _ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        recorder.reset()
        firstLeaf = nil
        defer {
            recorder.reset()
            firstLeaf = nil
        }
        return try db.transaction(what) { () throws(MsgError) -> R in
            let result = try body()
            // What the recorder made of the changes, written with them.
            let effects = recorder.take()
            try SQLiteTally.apply(effects.tally, db, logged: &loggedBytes)
            try SQLiteAges.apply(effects.created, db)
            try SQLiteFloors.apply(effects.floor, db)
            try SQLiteLedger.apply(effects, first: firstLeaf, db)
            return result
        }
    }

    public func counts(now: Timestamp, excluding excluded: Set<String>) throws(MsgError) -> StoreCounts? {
        try guarded { () throws(MsgError) -> StoreCounts? in
            guard let tally = try SQLiteTally.read(db) else { return nil }
            var notYetDue: [String: Int] = [:]
            let waiting = try db.statement("""
                SELECT recipient, count(*) FROM messages INDEXED BY messages_due
                WHERE due_at > ?1 AND status IN ('queued', 'failed') GROUP BY recipient
                """)
            waiting.bind(1, now.milliseconds)
            while try waiting.step("counting the messages not yet due") {
                notYetDue[String(decoding: waiting.bytes(0), as: UTF8.self)] = Int(waiting.int64(1))
            }
            waiting.reset()
            var inFlight: [String: Int] = [:]
            let sending = try db.statement("""
                SELECT recipient, count(*) FROM messages INDEXED BY messages_inflight
                WHERE lease_until IS NOT NULL GROUP BY recipient
                """)
            while try sending.step("counting the messages in flight") {
                inFlight[String(decoding: sending.bytes(0), as: UTF8.self)] = Int(sending.int64(1))
            }
            sending.reset()
            let oldest = try db.statement("""
                SELECT created_at FROM messages INDEXED BY messages_open
                WHERE open IS NOT NULL AND status IN ('queued', 'failed') AND (due_at IS NULL OR due_at <= ?1)
                AND recipient NOT IN (SELECT value FROM json_each(?2)) ORDER BY created_at, id LIMIT 1
                """)
            oldest.bind(1, now.milliseconds)
            oldest.bind(2, SQLiteQuery.jsonArray(excluded.sorted()))
            defer { oldest.reset() }
            let oldestDue = try oldest.step("reading the oldest due message") ? Timestamp(milliseconds: oldest.int64(0)) : nil
            return StoreCounts(tally: tally, notYetDue: notYetDue, inFlight: inFlight, oldestDue: oldestDue)
        }
    }
}
