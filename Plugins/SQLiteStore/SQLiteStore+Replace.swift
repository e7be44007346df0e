import MsgKit
import MsgSupport

/// A record's change by compare-and-set (``SQLiteStore/update(_:)``, claims): the
/// one UPDATE per shape of change; what it means beside the row is the recorder's.
extension SQLiteStore {
    /// Replaces a record if its status is still `expected`, found by the rowid a
    /// claim of this handle read it under when there is one (an integer key is
    /// cheaper than the id's text). The SET names only the indexed columns the change
    /// can move (SQLite re-indexes every indexed column a SET names, changed or not):
    /// `open` only when the record finishes or reopens, `lease_until` only into or out
    /// of `sending`, `due_at` only for a waiting status; `recipient` only when it
    /// changed (`queue edit`), found when the first try does not apply.
    /// First the change of most writes, whose row the recorder says how to find
    /// (``ChangeRecorder/commonChange(_:_:expected:prep:)``: its recipient, its
    /// ledger's entries and content); else the row is read and the recorder told
    /// what it was. `prep`: the ledger's fingerprint and common leaf, made beforehand.
    func replace(_ r: EncodedMessage, expected: Status, prep: LedgerPrep) throws(MsgError) -> Bool {
        // The message read where it is kept: `r.message` copies it out (a retain and
        // a release of each of its fields).
        try r.reading { (m) throws(MsgError) in try replace(r, m, expected: expected, prep: prep) }
    }

    private func replace(_ r: EncodedMessage, _ m: borrowing Message, expected: Status, prep: LedgerPrep) throws(MsgError) -> Bool {
        let new = m.status
        // Kept while the record is in flight: its outcome is stored by the same rowid.
        let byRow = rowids.isEmpty ? nil : (new == .sending ? rowids[RowKey(m.id)] : rowids.removeValue(forKey: RowKey(m.id)))
        let waiting: (Status) -> Bool = { $0 == .queued || $0 == .failed || $0 == .held }
        var shape = 0
        if StoredColumns.isOpen(expected) != StoredColumns.isOpen(new) { shape |= 1 }
        if expected == .sending || new == .sending { shape |= 2 }
        if waiting(expected) || waiting(new) { shape |= 4 }
        if byRow != nil { shape |= 8 }
        let split = SQLitePayloads.split(r.json, historyOffset: r.historyOffset)
        let common = recorder.commonChange(r, m, expected: expected, prep: prep)
        let s = try updateStatement(shape)
        s.reset()
        s.bind(11, common.facts.status)
        if let byRow { s.bind(12, byRow) }
        s.bind(14, split > 0 ? 1 : 0)
        try bindLedger(common.row, s)
        s.bind(18, Int64(common.facts.ledgerEntries))
        s.bind(19, common.facts.contentPrint)
        // Its recipient, ?3, is the row's (common.facts.recipient): RowEncoder binds it.
        try RowEncoder.run(r, m, s, "updating a message", split: split)
        if db.changes == 1 {
            try recorder.updated(r, m, from: common.facts, prep: prep)
            try keepContent(r, m, split, rid: byRow, expected: expected)
            return true
        }
        // Not applied: another status, another recipient, a content kept apart that
        // is whole now (``SQLitePayloads``), another ledger (an edit, a history gone
        // back, a message stored before the ledger), or no such row.
        let was = try db.statement("SELECT recipient, history_n, content_fp, created_at FROM messages WHERE id = ?1 AND status = ?2")
        was.bind(1, m.id)
        was.bind(2, expected.rawValue)
        defer { was.reset() }
        guard try was.step("reading a message") else { return false }
        let facts = StoredFacts(id: m.id, status: expected.rawValue, recipient: String(decoding: was.bytes(0), as: UTF8.self),
                                createdAt: Timestamp(milliseconds: was.int64(3)), ledgerEntries: Int(was.int64(1)), contentPrint: was.int64(2))
        was.reset()
        let row = try recorder.updated(r, m, from: facts, prep: prep)
        let edit = try updateStatement(16)
        edit.reset()
        edit.bind(11, expected.rawValue)
        try bindLedger(row, edit)
        try RowEncoder.run(r, m, edit, "updating a message", split: split)
        // Read under this transaction's write lock in its status: it is replaced.
        guard db.changes == 1 else {
            throw MsgError(.storeIO, "updating message \(m.id): the row read under lock was not replaced; nothing of this commit was stored")
        }
        // Its content, if it was kept apart, is in the row again.
        if split == 0, let rid = try rowid(of: m.id) { try removeContent(rid) }
        try keepContent(r, m, split, rid: nil, expected: expected)
        return true
    }

    /// The update of ``replace(_:expected:prep:)`` for one shape (bits: 1 open, 2 lease,
    /// 4 due, 8 by rowid; 16 every column, recipient too, by id; all but 16 only for
    /// one history entry appended to the same content), made once and held
    /// apart from the statement cache, whose lookup hashes the whole SQL text.
    func updateStatement(_ shape: Int) throws(MsgError) -> SQLiteStatement {
        if let s = updateStatements[shape] { return s }
        // The ledger: the numbers of the change's leaves appended to the row's list.
        var set = ["status = ?2", "updated_at = ?5", "record = ?9", "history_at = ?10", "content_len = ?13",
                   "ledger = CASE ?15 WHEN '' THEN ledger ELSE coalesce(ledger || ' ', '') || ?15 END", "history_n = ?16", "content_fp = ?17"]
        if shape & 1 != 0 || shape == 16 { set.append("open = ?8") }
        if shape & 2 != 0 || shape == 16 { set.append("lease_until = ?7") }
        if shape & 4 != 0 || shape == 16 { set.append("due_at = ?6") }
        var sql = "UPDATE messages SET " + (shape == 16 ? "recipient = ?3, " : "") + set.joined(separator: ", ")
        sql += shape & 8 != 0 ? " WHERE rid = ?12 AND id = ?1 AND status = ?11 AND recipient = ?3"
            : shape == 16 ? " WHERE id = ?1 AND status = ?11" : " WHERE id = ?1 AND status = ?11 AND recipient = ?3"
        // A whole text goes over a row that is whole: one with its content apart takes
        // the way by id, which removes that content too.
        if shape != 16 { sql += " AND (?14 OR content_len = 0) AND history_n = ?18 AND content_fp = ?19" }
        let s = try db.statement(sql)
        updateStatements[shape] = s
        return s
    }
}
