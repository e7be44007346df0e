import MsgKit
import MsgSupport

/// The store's ledger (schema 9; msg-ledger(1), ``LedgerStore``): the leaves the
/// recorder (``ChangeRecorder``) made for the changes of a transaction are written
/// in its commit (``SQLiteStore/counted(_:_:)``) as one row of `ledger`, the run of
/// leaves numbered from `first`: one insert a commit, however many changes it holds.
/// Each message's row lists its leaves in `ledger` (numbers, space-separated) and
/// keeps `history_n` and `content_fp` (``RowLedger``), the facts the recorder
/// chooses the next change's leaves from. A removed message keeps its list in
/// `ledger_removed`.
enum SQLiteLedger {
    static let tables = """
        ALTER TABLE messages ADD COLUMN ledger TEXT;
        ALTER TABLE messages ADD COLUMN history_n INTEGER NOT NULL DEFAULT -1;
        ALTER TABLE messages ADD COLUMN content_fp INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE ledger (first INTEGER PRIMARY KEY, count INTEGER NOT NULL, leaves BLOB NOT NULL);
        CREATE TABLE ledger_removed (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, ledger TEXT NOT NULL);
        """

    /// The run of leaves a commit made (``CommitEffects/leaves``) as a row of
    /// `ledger`, numbered from `first` (the ledger's end, read when they were).
    static func apply(_ effects: CommitEffects, first: Int?, _ db: SQLiteDatabase) throws(MsgError) {
        guard effects.leafCount > 0 else { return }
        let at: Int
        if let first { at = first } else { at = try end(db) }
        try insert(first: at, count: effects.leafCount, effects.leaves, db)
    }

    private static func insert(first: Int, count: Int, _ leaves: [UInt8], _ db: SQLiteDatabase) throws(MsgError) {
        let s = try db.statement("INSERT INTO ledger (first, count, leaves) VALUES (?1, ?2, ?3)")
        s.bind(1, Int64(first))
        s.bind(2, Int64(count))
        try leaves.withUnsafeBufferPointer { (b) throws(MsgError) in
            s.bindBlob(3, b)
            try s.run("writing the ledger")
        }
        s.reset()
    }

    /// The number the next leaf gets: after the last run.
    static func end(_ db: SQLiteDatabase) throws(MsgError) -> Int {
        Int(try db.integer("SELECT coalesce((SELECT first + count FROM ledger ORDER BY first DESC LIMIT 1), 0)"))
    }

    /// Starts the ledger of a store that holds `count` messages already (the
    /// migration to schema 9; a store carried out of a damaged file), in the
    /// caller's transaction.
    static func begin(_ db: SQLiteDatabase, count: Int) throws(MsgError) {
        var bytes: [UInt8] = []
        try LedgerLeaf.began(count).write(to: &bytes)
        try insert(first: try end(db), count: 1, bytes, db)
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
    /// The numbers of `leaves` (their places in the transaction's run), as a row's
    /// `ledger` text lists them: after the ledger's last leaf when the transaction began.
    func leafNumbers(_ leaves: Range<Int>) throws(MsgError) -> String {
        if leaves.isEmpty { return "" }
        let first: Int
        if let firstLeaf { first = firstLeaf } else {
            first = try SQLiteLedger.end(db)
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

extension SQLiteStore: LedgerStore {
    /// Not ``guarded(_:)`` itself: the reads in `body` are, and a damaged file is
    /// reported once.
    public func ledgerRead<R>(_ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        try db.snapshot("reading the ledger", body)
    }

    public func ledgerSize() throws(MsgError) -> Int {
        try guarded { () throws(MsgError) -> Int in try SQLiteLedger.end(db) }
    }

    public func ledgerRuns(from: Int, _ body: (Int, UnsafeRawBufferPointer) throws(MsgError) -> Bool) throws(MsgError) {
        try guarded { () throws(MsgError) in
            let s = try db.statement("""
                SELECT first, leaves FROM ledger WHERE first >= coalesce((SELECT max(first) FROM ledger WHERE first <= ?1), 0) ORDER BY first
                """)
            s.bind(1, Int64(from))
            defer { s.reset() }
            while try s.step("reading the ledger") {
                if try !body(Int(s.int64(0)), UnsafeRawBufferPointer(s.bytes(1))) { break }
            }
        }
    }

    public func ledgerRun(holding index: Int) throws(MsgError) -> (first: Int, bytes: [UInt8])? {
        try guarded { () throws(MsgError) -> (first: Int, bytes: [UInt8])? in
            let s = try db.statement("SELECT first, count, leaves FROM ledger WHERE first <= ?1 ORDER BY first DESC LIMIT 1")
            s.bind(1, Int64(index))
            defer { s.reset() }
            guard try s.step("reading the ledger"), Int(s.int64(0) + s.int64(1)) > index else { return nil }
            return (Int(s.int64(0)), Array(s.bytes(2)))
        }
    }

    public func ledgerMessages(_ body: (EncodedMessage?, String, [Int]?) throws(MsgError) -> Bool) throws(MsgError) {
        try guarded { () throws(MsgError) in
            let s = try db.statement("SELECT \(Row.columns), ledger FROM messages ORDER BY rid")
            defer { s.reset() }
            while try s.step("reading the messages") {
                let row = Row(s)
                let r = row.record()
                let list = s.isNull(7) ? nil : SQLiteLedger.numbers(s.bytes(7)) ?? []
                if try !body(r, row.id, list) { return }
            }
            s.reset()
            let removed = try db.statement("SELECT id, ledger FROM ledger_removed ORDER BY seq")
            defer { removed.reset() }
            while try removed.step("reading the removed messages") {
                let id = String(decoding: removed.bytes(0), as: UTF8.self)
                if try !body(nil, id, SQLiteLedger.numbers(removed.bytes(1)) ?? []) { return }
            }
        }
    }
}
