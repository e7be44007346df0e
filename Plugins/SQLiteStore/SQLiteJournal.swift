import MsgKit

/// The store's commit journal (schema 10; ``CommitFold``): what each transaction's
/// changes mean beside their rows, as ``ChangeRecorder`` decided it, written in its
/// commit (``SQLiteStore/counted(_:_:)``) as one row of `commits`: its `seq`, the
/// number of its first leaf (`first`) and their `count`, the effects' bytes
/// (``CommitEffects/journalBytes(into:)``) and the leaves. One insert a commit, on
/// the last page of one b-tree, and of one index for the ledger's runs.
///
/// The store reads and decides nothing of the bytes; MsgKit does:
/// - the counts: the snapshot in `kept` (name `fold`, ``CommitFold``) plus the rows
///   after its mark; the commit that appends a 512th row, or this handle's 2 MiB of
///   row bytes since it last folded, folds them in;
/// - the floors since a mark: the rows after it;
/// - the ledger: the rows' leaves, numbered from `first` (``JournalStore/ledgerRuns(from:_:)``). Each
///   message's row lists its leaves in `ledger` (numbers, space-separated) and keeps
///   `history_n` and `content_fp` (``RowLedger``), the facts the recorder chooses
///   the next change's leaves from; a removed message keeps its list in
///   `ledger_removed`.
///
/// `kept` also holds, per kind of run, where the last one-shot run's claim scan
/// stopped (`hint:<kind>`, ``JournalStore/saveScanHint(_:_:)``).
enum SQLiteJournal {
    static let tables = """
        CREATE TABLE commits (seq INTEGER PRIMARY KEY, first INTEGER NOT NULL, count INTEGER NOT NULL, effects BLOB NOT NULL, leaves BLOB);
        CREATE INDEX commits_ledger ON commits(first) WHERE count > 0;
        CREATE TABLE kept (name TEXT NOT NULL PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
        """

    /// Appends the commit's row, in the caller's transaction, its leaves numbered
    /// from `first` (the ledger's end, read when they were numbered), and folds
    /// when it falls due (`appended`: this handle's row bytes since its last fold).
    static func append(_ effects: CommitEffects, first: Int?, _ db: SQLiteDatabase, appended: inout Int) throws(MsgError) {
        if effects.isEmpty { return }
        let at: Int
        if let first { at = first } else { at = try end(db) }
        var bytes: [UInt8] = []
        effects.journalBytes(into: &bytes)
        let s = try db.statement("INSERT INTO commits (first, count, effects, leaves) VALUES (?1, ?2, ?3, ?4) RETURNING seq")
        defer { s.reset() }
        s.bind(1, Int64(at))
        s.bind(2, Int64(effects.leafCount))
        let seq = try bytes.withUnsafeBufferPointer { (b) throws(MsgError) -> Int64 in
            try effects.leaves.withUnsafeBufferPointer { (leaves) throws(MsgError) -> Int64 in
                s.bindBlob(3, b)
                s.bindBlob(4, leaves)
                guard try s.step("writing the commit journal") else { return 0 }
                return s.int64(0)
            }
        }
        s.reset()
        appended += bytes.count
        if seq % CommitFold.foldEvery == 0 || appended >= CommitFold.foldBytes {
            try fold(db)
            appended = 0
        }
    }

    /// Folds the rows after the snapshot's mark into it (none when the store is not
    /// counted whole: it counts afresh when next opened for writing).
    static func fold(_ db: SQLiteDatabase) throws(MsgError) {
        guard var fold = try read(db) else { return }
        fold.prune(now: .now())
        try save(fold, db)
    }

    /// The snapshot and the rows after it, in the caller's transaction or snapshot;
    /// nil when the store is not counted whole. The mark is then the last row's.
    static func read(_ db: SQLiteDatabase) throws(MsgError) -> CommitFold? {
        let snap = try db.statement("SELECT value FROM kept WHERE name = 'fold'")
        defer { snap.reset() }
        guard try snap.step("reading the counts"), var fold = CommitFold(snapshot: UnsafeRawBufferPointer(snap.bytes(0))) else { return nil }
        snap.reset()
        let rows = try db.statement("SELECT seq, effects FROM commits WHERE seq > ?1 ORDER BY seq")
        defer { rows.reset() }
        rows.bind(1, fold.mark)
        while try rows.step("reading the counts") {
            fold.add(journal: UnsafeRawBufferPointer(rows.bytes(1)))
            fold.mark = rows.int64(0)
        }
        return fold
    }

    /// Keeps `fold` as the snapshot.
    static func save(_ fold: CommitFold, _ db: SQLiteDatabase) throws(MsgError) {
        var bytes: [UInt8] = []
        fold.snapshot(into: &bytes)
        try keep("fold", bytes, db)
    }

    static func keep(_ name: String, _ value: [UInt8], _ db: SQLiteDatabase) throws(MsgError) {
        let s = try db.statement("INSERT INTO kept (name, value) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET value = ?2")
        defer { s.reset() }
        s.bind(1, name)
        try value.withUnsafeBufferPointer { (b) throws(MsgError) in
            s.bindBlob(2, b)
            try s.run("keeping the store's counts")
        }
    }

    /// Whether the store is counted whole.
    static func isWhole(_ db: SQLiteDatabase) throws(MsgError) -> Bool {
        try db.integer("SELECT count(*) FROM kept WHERE name = 'fold'") > 0
    }

    /// The last row's number (0 for none).
    static func newest(_ db: SQLiteDatabase) throws(MsgError) -> Int64 {
        try db.integer("SELECT coalesce(max(seq), 0) FROM commits")
    }

    /// The number the next leaf gets: after the last row's.
    static func end(_ db: SQLiteDatabase) throws(MsgError) -> Int {
        Int(try db.integer("SELECT coalesce((SELECT first + count FROM commits ORDER BY seq DESC LIMIT 1), 0)"))
    }

    /// Counts every record afresh, in the caller's transaction: each record by its
    /// stored recipient and status, the attempts its history keeps (a damaged
    /// record's text keeps none that reads), and the last ``CommitFold/kept`` minutes.
    static func recount(_ db: SQLiteDatabase) throws(MsgError) {
        var fold = CommitFold()
        fold.mark = try newest(db)
        let s = try db.statement("SELECT \(Row.columns) FROM messages")
        var batch: [Row.Copy] = []
        func count() {
            for (row, r) in zip(batch, SQLiteStore.decodeAll(batch)) {
                fold.tally.add(1, to: Tally.records(to: row.to, status: row.status))
                fold.tally.attempts(in: r.message)
            }
            batch.removeAll(keepingCapacity: true)
        }
        while try s.step("counting the messages afresh") {
            batch.append(Row(s).copy())
            if batch.count >= 4096 { count() }
        }
        s.reset()
        count()
        fold.created = try minutes(db, now: .now())
        try save(fold, db)
    }

    /// The records of the last ``CommitFold/kept`` minutes by status and minute.
    static func minutes(_ db: SQLiteDatabase, now: Timestamp) throws(MsgError) -> [CreatedMinute: Int] {
        let s = try db.statement("""
            SELECT status, CASE WHEN created_at >= 0 THEN created_at / 60000 ELSE -((59999 - created_at) / 60000) END AS m, count(*)
            FROM messages WHERE created_at >= ?1 GROUP BY status, m
            """)
        defer { s.reset() }
        s.bind(1, (CreatedMinute.minute(of: now) - CommitFold.kept) * 60_000)
        var out: [CreatedMinute: Int] = [:]
        while try s.step("counting messages by age") {
            out[CreatedMinute(status: String(decoding: s.bytes(0), as: UTF8.self), minute: s.int64(1))] = Int(s.int64(2))
        }
        return out
    }

    /// Starts the ledger of a store that holds `count` messages already (the
    /// migration to schema 9; a store carried out of a damaged file), in the
    /// caller's transaction.
    static func begin(_ db: SQLiteDatabase, count: Int, appended: inout Int) throws(MsgError) {
        var effects = CommitEffects()
        try LedgerLeaf.began(count).write(to: &effects.leaves)
        effects.leafCount = 1
        try append(effects, first: nil, db, appended: &appended)
    }

    /// The numbers in a row's `ledger` text; nil for none or text that is not a list.
    static func numbers(_ text: UnsafeBufferPointer<UInt8>) -> [Int]? {
        var out: [Int] = []
        var n = 0
        var digits = 0
        for c in text {
            if c == UInt8(ascii: " ") {
                guard digits > 0 else { return nil }
                out.append(n)
                n = 0
                digits = 0
            } else if c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9"), digits < 18 {
                n = n * 10 + Int(c - UInt8(ascii: "0"))
                digits += 1
            } else {
                return nil
            }
        }
        guard digits > 0 else { return nil }
        out.append(n)
        return out
    }
}

extension SQLiteStore {
    /// `db.transaction` that also stores, before the commit, what the changes `body`
    /// makes mean beside their rows, as ``recorder`` decided: one journal row.
    func counted<R>(_ what: String, _ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        recorder.reset()
        firstLeaf = nil
        defer {
            recorder.reset()
            firstLeaf = nil
        }
        return try db.transaction(what) { () throws(MsgError) -> R in
            let result = try body()
            try SQLiteJournal.append(recorder.take(), first: firstLeaf, db, appended: &journalBytes)
            return result
        }
    }

    /// The numbers of `leaves` (their places in the transaction's run), as a row's
    /// `ledger` text lists them: after the ledger's last leaf when the transaction began.
    func leafNumbers(_ leaves: Range<Int>) throws(MsgError) -> String {
        if leaves.isEmpty { return "" }
        let first: Int
        if let firstLeaf { first = firstLeaf } else {
            first = try SQLiteJournal.end(db)
            firstLeaf = first
        }
        // One leaf a change, nearly always: no list to join.
        if leaves.count == 1 { return String(first + leaves.lowerBound) }
        return leaves.map { String(first + $0) }.joined(separator: " ")
    }

    /// Binds what a row gets of the ledger: ?15 the numbers of its new leaves (put
    /// after those it lists), ?16 the history entries its ledger holds, ?17 its
    /// content's fingerprint.
    func bindLedger(_ row: RowLedger, _ s: SQLiteStatement) throws(MsgError) {
        s.bind(15, try leafNumbers(row.leaves))
        s.bind(16, Int64(row.entries))
        s.bind(17, row.contentPrint)
    }
}
