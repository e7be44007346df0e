import CSQLite
import MsgKit

/// Carries what can still be read of a damaged store into a new one at its path,
/// so that records acknowledged into a file before anyone knew it was damaged stay
/// in sight (`queue ls`, `flush`), not only in the file set aside.
///
/// A SQLite row holds a record's current version and nothing older, so a row that
/// still reads is the record as it is: carrying it over can neither resurrect an
/// old version nor lose a newer one (a JSON store's lines could, so that store is
/// set aside whole). The damaged file is opened read-only and never written to.
///
/// Rows are read in primary-key order from both ends, each scan until it meets the
/// damage; when either stopped early, the ids the FIFO and status indexes still
/// list (again from both ends) are looked up one by one. Each row goes over as it
/// is stored (a damaged record stays damaged, and is read as its stand-in).
enum Salvage {
    /// The columns copied, in the order of ``insertSQL``, from a file of schema 8
    /// (`content_len` reads) or older. A record whose content was kept apart goes
    /// over whole (``SQLitePayloads``); when that content does not read, or reads
    /// but the whole is no record (a page cut short reads as zeros, and the rest of
    /// the text, in another page, still has the shape msg writes), its row's text
    /// alone (a tenth column), which reads as a damaged record: in sight, with its id.
    /// Where the contents cannot be read at all (their table is damaged), a second
    /// pass carries each row's own text.
    static func columns(_ old: SQLiteDatabase) -> [String] {
        let plain = "id, status, recipient, created_at, updated_at, due_at, lease_until, record, history_at"
        guard (try? old.statement("SELECT content_len FROM messages LIMIT 0")) != nil else { return [plain] }
        return ["id, status, recipient, created_at, updated_at, due_at, lease_until, coalesce(\(SQLitePayloads.text), record), history_at, record", plain]
    }
    /// The columns derived as ``StoredColumns`` derives them, whatever the schema of
    /// the damaged file.
    static let insertSQL = """
        INSERT INTO messages (id, status, recipient, created_at, updated_at, due_at, lease_until, open, record, history_at)
        VALUES (?1, ?2, ?3, ?4, ?5,
                CASE WHEN ?2 IN ('queued', 'failed', 'held') THEN ?6 END,
                CASE WHEN ?2 = 'sending' THEN coalesce(?7, 0) END,
                CASE WHEN ?2 IN ('queued', 'failed', 'sending') THEN 1 END,
                ?8, ?9)
        ON CONFLICT(id) DO NOTHING
        """

    /// Copies the readable rows of `aside` into a store at `path` (created).
    /// - Returns: how many records were carried over, and whether every row read
    ///   (nothing was met that did not).
    /// - Throws: `storeIO` when the new store cannot be written.
    static func run(from aside: String, into path: String) throws(MsgError) -> (carried: Int, complete: Bool) {
        guard let old = try? SQLiteDatabase(path: aside, access: .read, busyTimeout: 0, readOnly: true) else { return (0, false) }
        // A file cut short says in its header it has more pages than it has; SQLite
        // then refuses it whole unless told to read what is there (a flag of this
        // connection: nothing is written).
        try? old.execute("PRAGMA writable_schema=ON", "reading what is left")
        let new = try SQLiteDatabase(path: path, access: .write)
        try new.execute("PRAGMA synchronous=FULL", "opening it")
        try SQLiteSchema.migrate(new)
        // The rows go over uncounted: the counts are made afresh at the end (or, if
        // this process is killed before, by the next one to open the store).
        try new.execute("DELETE FROM kept WHERE name = 'fold'", "carrying records over")
        var carried = 0
        var appended = 0
        var pending: [[Value]] = []
        func flush() throws(MsgError) {
            guard !pending.isEmpty else { return }
            try new.transaction("carrying \(pending.count) readable records into the new store") { () throws(MsgError) in
                let insert = try new.statement(insertSQL)
                var here = 0
                for row in pending {
                    insert.reset()
                    for (i, v) in row.enumerated() { v.bind(insert, Int32(i + 1)) }
                    try insert.run("carrying a record over")
                    if new.changes == 1 { here += 1 }
                }
                carried += here
                // The new store's ledger begins again with them (the old one stays
                // in the damaged file): each is covered from its next change.
                if here > 0 { try SQLiteJournal.begin(new, count: here, appended: &appended) }
            }
            pending.removeAll(keepingCapacity: true)
        }
        var complete = true
        for columns in Self.columns(old) {
            // Whole rows from both ends of the table.
            complete = true
            for order in ["ASC", "DESC"] {
                let finished = try scan(old, "SELECT \(columns) FROM messages ORDER BY id \(order)") { (s) throws(MsgError) in
                    if let row = Value.row(s) { pending.append(row) }
                    if pending.count >= 10_000 { try flush() }
                }
                try flush()
                if finished { break }
                complete = false
            }
            if !complete {
                // Ids the indexes still list, each row looked up by its key.
                for (index, order) in [("messages_fifo", "created_at, id"), ("messages_status", "status, created_at, id")] {
                    for direction in ["ASC", "DESC"] {
                        let by = order.split(separator: ",").map { "\($0) \(direction)" }.joined(separator: ",")
                        var ids: [String] = []
                        _ = try scan(old, "SELECT id FROM messages INDEXED BY \(index) ORDER BY \(by)") { (s) throws(MsgError) in
                            ids.append(String(decoding: s.bytes(0), as: UTF8.self))
                        }
                        for id in ids {
                            guard let lookup = try? old.statement("SELECT \(columns) FROM messages WHERE id = ?1") else { break }
                            lookup.bind(1, id)
                            if (try? lookup.step()) == true, let row = Value.row(lookup) { pending.append(row) }
                            lookup.reset()
                            if pending.count >= 10_000 { try flush() }
                        }
                        try flush()
                    }
                }
            }
            if complete { break }
        }
        // Destination states only delay or throttle: what reads is kept, the rest forgotten.
        var states: [(String, String)] = []
        _ = try scan(old, "SELECT key, state FROM destinations") { (s) throws(MsgError) in
            states.append((String(decoding: s.bytes(0), as: UTF8.self), String(decoding: s.bytes(1), as: UTF8.self)))
        }
        if !states.isEmpty {
            try new.transaction("carrying destination states over") { () throws(MsgError) in
                let upsert = try new.statement("INSERT INTO destinations (key, state) VALUES (?1, ?2) ON CONFLICT(key) DO NOTHING")
                for (key, state) in states {
                    upsert.reset()
                    upsert.bind(1, key)
                    upsert.bind(2, state)
                    try upsert.run("carrying a destination state over")
                }
            }
        }
        try new.transaction("counting the messages carried over") { () throws(MsgError) in try SQLiteJournal.recount(new) }
        return (carried, complete)
    }

    /// Steps `sql` on the damaged file, calling `row` for each row, until its end or
    /// the first error. - Returns: whether it reached the end. - Throws: what `row` throws.
    private static func scan(_ db: SQLiteDatabase, _ sql: String, _ row: (SQLiteStatement) throws(MsgError) -> Void) throws(MsgError) -> Bool {
        guard let s = try? db.statement(sql) else { return false }
        defer { s.reset() }
        while true {
            let more: Bool
            do throws(MsgError) { more = try s.step() } catch { return false }
            guard more else { return true }
            try row(s)
        }
    }

    /// One column's value, copied out of the damaged file.
    enum Value {
        case null
        case integer(Int64)
        case text([UInt8])

        /// The nine columns of the statement's current row, or nil when one that may
        /// not be null is (the row is not a record any more); with a tenth (the row's
        /// own text, ``columns(_:)``), that in place of a whole that is no record.
        static func row(_ s: SQLiteStatement) -> [Value]? {
            guard var values = nine(s) else { return nil }
            // A content kept apart whose whole does not read as a record: the row's own text.
            if s.columnCount > 9, !s.isNull(9), case .text(let whole) = values[7], case .integer(let cut) = values[8],
               whole.count != s.bytes(9).count, (try? EncodedMessage(stored: whole, historyOffset: Int(cut))) == nil {
                values[7] = .text(Array(s.bytes(9)))
            }
            return values
        }

        private static func nine(_ s: SQLiteStatement) -> [Value]? {
            let nullable: Set<Int32> = [5, 6]
            var values: [Value] = []
            for i: Int32 in 0..<9 {
                if s.isNull(i) {
                    guard nullable.contains(i) else { return nil }
                    values.append(.null)
                } else if i == 3 || i == 4 || i == 5 || i == 6 || i == 8 {
                    values.append(.integer(s.int64(i)))
                } else {
                    values.append(.text(Array(s.bytes(i))))
                }
            }
            return values
        }

        func bind(_ s: SQLiteStatement, _ index: Int32) {
            switch self {
            case .null: s.bind(index, nil as Int64?)
            case .integer(let v): s.bind(index, v)
            case .text(let bytes): s.bind(index, String(decoding: bytes, as: UTF8.self))
            }
        }
    }
}
