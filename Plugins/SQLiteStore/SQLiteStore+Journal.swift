import MsgKit

/// The commit journal (``SQLiteJournal``), from which MsgKit makes the counts,
/// floors, hints and ledger (``JournalStore``).
extension SQLiteStore: JournalStore {
    public func journalFold<R>(_ body: (CommitFold?) throws(MsgError) -> R) throws(MsgError) -> R {
        try guarded { () throws(MsgError) -> R in
            try db.consistent("reading the counts") { () throws(MsgError) -> R in try body(try SQLiteJournal.read(db)) }
        }
    }

    public func openCounts(now: Timestamp, excluding excluded: Set<String>) throws(MsgError) -> OpenCounts {
        try guarded { () throws(MsgError) -> OpenCounts in
            let notYetDue = try countsBy("""
                SELECT recipient, count(*) FROM messages INDEXED BY messages_due
                WHERE due_at > ?1 AND status IN ('queued', 'failed') GROUP BY recipient
                """, now)
            let inFlight = try countsBy("""
                SELECT recipient, count(*) FROM messages INDEXED BY messages_inflight
                WHERE lease_until IS NOT NULL GROUP BY recipient
                """, nil)
            let oldest = try db.statement("""
                SELECT created_at FROM messages INDEXED BY messages_open
                WHERE open IS NOT NULL AND status IN ('queued', 'failed') AND (due_at IS NULL OR due_at <= ?1)
                AND recipient NOT IN (SELECT value FROM json_each(?2)) ORDER BY created_at, id LIMIT 1
                """)
            oldest.bind(1, now.milliseconds)
            oldest.bind(2, SQLiteQuery.jsonArray(excluded.sorted()))
            defer { oldest.reset() }
            let oldestDue = try oldest.step("reading the oldest due message") ? Timestamp(milliseconds: oldest.int64(0)) : nil
            return OpenCounts(notYetDue: notYetDue, inFlight: inFlight, oldestDue: oldestDue)
        }
    }

    /// The figures of a `SELECT key, count(*) … GROUP BY key` (?1 `now`, when given).
    private func countsBy(_ sql: String, _ now: Timestamp?) throws(MsgError) -> [String: Int] {
        let s = try db.statement(sql)
        defer { s.reset() }
        if let now { s.bind(1, now.milliseconds) }
        var out: [String: Int] = [:]
        while try s.step("counting messages") {
            out[String(decoding: s.bytes(0), as: UTF8.self)] = Int(s.int64(1))
        }
        return out
    }

    public func createdCounts(after start: Timestamp, before end: Timestamp) throws(MsgError) -> [String: Int] {
        try guarded { () throws(MsgError) -> [String: Int] in
            let s = try db.statement("""
                SELECT status, count(*) FROM messages INDEXED BY messages_fifo WHERE created_at > ?1 AND created_at < ?2 GROUP BY status
                """)
            defer { s.reset() }
            s.bind(1, start.milliseconds)
            s.bind(2, end.milliseconds)
            var out: [String: Int] = [:]
            while try s.step("counting messages by age") {
                out[String(decoding: s.bytes(0), as: UTF8.self)] = Int(s.int64(1))
            }
            return out
        }
    }

    public func journalFloors(since mark: Int64?, limit: Int) throws(MsgError) -> (mark: Int64, floors: [CommitEffects.Floor?]?) {
        try guarded { () throws(MsgError) -> (mark: Int64, floors: [CommitEffects.Floor?]?) in
            try db.consistent("reading where the queue changed") { () throws(MsgError) -> (mark: Int64, floors: [CommitEffects.Floor?]?) in
                let newest = try SQLiteJournal.newest(db)
                // No mark, or one ahead of this store (another file now at its path).
                guard let mark, mark <= newest else { return (newest, nil) }
                if mark == newest { return (newest, []) }
                // Far behind: anything may have changed, without reading thousands of rows.
                if newest - mark > Int64(limit) { return (newest, nil) }
                let s = try db.statement("SELECT effects FROM commits WHERE seq > ?1 AND seq <= ?2")
                defer { s.reset() }
                s.bind(1, mark)
                s.bind(2, newest)
                var floors: [CommitEffects.Floor?] = []
                while try s.step("reading where the queue changed") {
                    floors.append(CommitEffects.floor(ofJournal: UnsafeRawBufferPointer(s.bytes(0))))
                }
                return (newest, floors)
            }
        }
    }

    public func kept(_ name: String) throws(MsgError) -> [UInt8]? {
        try guarded { () throws(MsgError) -> [UInt8]? in
            let s = try db.statement("SELECT value FROM kept WHERE name = ?1")
            s.bind(1, name)
            defer { s.reset() }
            guard try s.step("reading a value kept beside the journal") else { return nil }
            return Array(s.bytes(0))
        }
    }

    /// In a transaction of its own, not ``counted(_:_:)``: no journal row.
    public func keep(_ name: String, _ value: [UInt8]) throws(MsgError) {
        try guarded { () throws(MsgError) in
            try db.transaction("keeping a value beside the journal") { () throws(MsgError) in
                try SQLiteJournal.keep(name, value, db)
            }
        }
    }

    // MARK: The ledger

    /// Not ``guarded(_:)`` itself: the reads in `body` are, and a damaged file is
    /// reported once.
    public func ledgerRead<R>(_ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        try db.snapshot("reading the ledger", body)
    }

    public func ledgerSize() throws(MsgError) -> Int {
        try guarded { () throws(MsgError) -> Int in try SQLiteJournal.end(db) }
    }

    public func ledgerRuns(from: Int, _ body: (Int, UnsafeRawBufferPointer) throws(MsgError) -> Bool) throws(MsgError) {
        try guarded { () throws(MsgError) in
            let s = try db.statement("""
                SELECT first, leaves FROM commits WHERE count > 0
                AND first >= coalesce((SELECT max(first) FROM commits WHERE count > 0 AND first <= ?1), 0) ORDER BY first
                """)
            s.bind(1, Int64(from))
            defer { s.reset() }
            while try s.step("reading the ledger") {
                if try !body(Int(s.int64(0)), UnsafeRawBufferPointer(s.bytes(1))) { break }
            }
        }
    }

    public func ledgerMessages(_ body: (EncodedMessage?, String, [Int]?) throws(MsgError) -> Bool) throws(MsgError) {
        try guarded { () throws(MsgError) in
            let s = try db.statement("SELECT \(Row.columns), ledger FROM messages ORDER BY rid")
            defer { s.reset() }
            while try s.step("reading the messages") {
                let row = Row(s)
                let r = row.record()
                let list = s.isNull(7) ? nil : SQLiteJournal.numbers(s.bytes(7)) ?? []
                if try !body(r, row.id, list) { return }
            }
            s.reset()
            let removed = try db.statement("SELECT id, ledger FROM ledger_removed ORDER BY seq")
            defer { removed.reset() }
            while try removed.step("reading the removed messages") {
                let id = String(decoding: removed.bytes(0), as: UTF8.self)
                if try !body(nil, id, SQLiteJournal.numbers(removed.bytes(1)) ?? []) { return }
            }
        }
    }
}
