import MsgKit
import MsgSupport

/// The store's ledger (schema 9; msg-ledger(1), ``LedgerStore``): the leaves of the
/// transaction under way are gathered by its changes (``SQLiteStore/add(_:)``,
/// ``SQLiteStore/replace(_:expected:prep:)``, ``SQLiteStore/remove(_:)``) and written
/// in its commit (``SQLiteStore/counted(_:_:)``) as one row of `ledger`, the run of
/// leaves numbered from `first`: one insert a commit, however many changes it holds.
/// Each message's row lists its leaves in `ledger` (numbers, space-separated) and
/// keeps `history_n`, how many of its history entries the ledger holds, and
/// `content_fp`, a fingerprint of its content (``LedgerLeaf/contentPrint(_:)``): a
/// change whose row still has one entry fewer and the same content is an entry
/// appended (the common case, taken by the UPDATE's own WHERE without reading the
/// row); any other is read and written as a whole state. A removed message keeps
/// its list in `ledger_removed`.
enum SQLiteLedger {
    static let tables = """
        ALTER TABLE messages ADD COLUMN ledger TEXT;
        ALTER TABLE messages ADD COLUMN history_n INTEGER NOT NULL DEFAULT -1;
        ALTER TABLE messages ADD COLUMN content_fp INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE ledger (first INTEGER PRIMARY KEY, count INTEGER NOT NULL, leaves BLOB NOT NULL);
        CREATE TABLE ledger_removed (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, ledger TEXT NOT NULL);
        """

    /// The leaves of the transaction under way.
    struct Pending {
        /// The number of the first, once read.
        var first: Int?
        var count = 0
        var bytes: [UInt8] = []
    }

    /// The run of leaves `pending` holds, as a row of `ledger`.
    static func apply(_ pending: Pending, _ db: SQLiteDatabase) throws(MsgError) {
        guard pending.count > 0, let first = pending.first else { return }
        let s = try db.statement("INSERT INTO ledger (first, count, leaves) VALUES (?1, ?2, ?3)")
        s.bind(1, Int64(first))
        s.bind(2, Int64(pending.count))
        try pending.bytes.withUnsafeBufferPointer { (b) throws(MsgError) in
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
        var p = Pending(first: try end(db))
        try LedgerLeaf.began(count).write(to: &p.bytes)
        p.count = 1
        try apply(p, db)
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
    /// Adds the leaf `prep` holds for `r` (stored anew: its state; else its last
    /// history entry appended), made again when it could not be beforehand.
    func appendLeaf(_ prep: LedgerPrep, _ r: EncodedMessage, stored: Bool) throws(MsgError) {
        _ = try nextLeaf()
        ledger.bytes.append(contentsOf: try prep.leaf(r, stored: stored))
        ledger.count += 1
    }

    /// The number the next leaf of this transaction gets.
    func nextLeaf() throws(MsgError) -> Int {
        if ledger.first == nil { ledger.first = try SQLiteLedger.end(db) }
        return ledger.first! + ledger.count
    }

    /// Adds `leaf` to the transaction's run.
    /// - Returns: its number.
    @discardableResult
    func appendLeaf(_ leaf: LedgerLeaf) throws(MsgError) -> Int {
        let n = try nextLeaf()
        leaf.write(to: &ledger.bytes)
        ledger.count += 1
        return n
    }

    /// The numbers of `count` leaves from the next one, as a row's `ledger` text adds them.
    func leafNumbers(_ count: Int) throws(MsgError) -> String {
        let first = try nextLeaf()
        return (first..<(first + count)).map(String.init).joined(separator: " ")
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
