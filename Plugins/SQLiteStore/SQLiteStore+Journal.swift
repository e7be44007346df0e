import MsgKit

/// Counts, floors and the ledger, each read from the commit journal (``SQLiteJournal``).
extension SQLiteStore: StoreCounting, ChangeFloors, LedgerStore {
    public func counts(now: Timestamp, excluding excluded: Set<String>) throws(MsgError) -> StoreCounts? {
        try guarded { () throws(MsgError) -> StoreCounts? in
            guard let fold = try db.consistent("reading the counts", { () throws(MsgError) in try SQLiteJournal.read(db) }) else { return nil }
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
            return StoreCounts(tally: fold.tally, notYetDue: notYetDue, inFlight: inFlight, oldestDue: oldestDue)
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

    public func created(after times: [Timestamp]) throws(MsgError) -> [String: [Int]]? {
        try guarded { () throws(MsgError) -> [String: [Int]]? in
            // The fold and the minutes' partial counts in one snapshot.
            try db.consistent("counting messages by age") { () throws(MsgError) -> [String: [Int]]? in
                guard let fold = try SQLiteJournal.read(db) else { return nil }
                let partial = try db.statement("""
                    SELECT status, count(*) FROM messages INDEXED BY messages_fifo WHERE created_at > ?1 AND created_at < ?2 GROUP BY status
                    """)
                defer { partial.reset() }
                return try fold.created(after: times, now: .now()) { (t) throws(MsgError) -> [String: Int] in
                    partial.reset()
                    partial.bind(1, t.milliseconds)
                    partial.bind(2, (CreatedMinute.minute(of: t) + 1) * 60_000)
                    var out: [String: Int] = [:]
                    while try partial.step("counting messages by age") {
                        out[String(decoding: partial.bytes(0), as: UTF8.self)] = Int(partial.int64(1))
                    }
                    return out
                }
            }
        }
    }

    // MARK: ChangeFloors

    public func changeFloor(since mark: Int64?) throws(MsgError) -> ChangeFloor {
        try guarded { () throws(MsgError) -> ChangeFloor in
            try db.consistent("reading where the queue changed") { () throws(MsgError) -> ChangeFloor in
                let newest = try SQLiteJournal.newest(db)
                guard let mark, mark < newest else { return CommitFold.floor(since: mark, newest: newest, []) }
                // Far behind: anything may have changed, without reading thousands of rows.
                if newest - mark > SQLiteJournal.floorRows { return ChangeFloor(mark: newest, floor: .all) }
                let s = try db.statement("SELECT effects FROM commits WHERE seq > ?1 AND seq <= ?2")
                defer { s.reset() }
                s.bind(1, mark)
                s.bind(2, newest)
                var floors: [CommitEffects.Floor?] = []
                while try s.step("reading where the queue changed") {
                    floors.append(CommitEffects.floor(ofJournal: UnsafeRawBufferPointer(s.bytes(0))))
                }
                return CommitFold.floor(since: mark, newest: newest, floors)
            }
        }
    }

    public func scanHint(_ kind: String) throws(MsgError) -> String? {
        try guarded { () throws(MsgError) -> String? in
            let s = try db.statement("SELECT value FROM kept WHERE name = ?1")
            s.bind(1, "hint:" + kind)
            defer { s.reset() }
            guard try s.step("reading where the last claim stopped") else { return nil }
            return String(decoding: s.bytes(0), as: UTF8.self)
        }
    }

    /// In a transaction of its own, not ``counted(_:_:)``: no journal row.
    public func saveScanHint(_ kind: String, _ hint: String) throws(MsgError) {
        try guarded { () throws(MsgError) in
            try db.transaction("noting where the claim stopped") { () throws(MsgError) in
                try SQLiteJournal.keep("hint:" + kind, Array(hint.utf8), db)
            }
        }
    }

    // MARK: LedgerStore

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

    public func ledgerRun(holding index: Int) throws(MsgError) -> (first: Int, bytes: [UInt8])? {
        try guarded { () throws(MsgError) -> (first: Int, bytes: [UInt8])? in
            let s = try db.statement("SELECT first, count, leaves FROM commits WHERE count > 0 AND first <= ?1 ORDER BY first DESC LIMIT 1")
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
