import MsgKit

/// Binds a record's columns to an INSERT or UPDATE and runs it: ?1 id, ?2 status,
/// ?3 recipient, ?4 created_at, ?5 updated_at, ?6 due_at, ?7 lease_until, ?8 open,
/// ?9 record (the text from `split` on), ?10 history_at, ?13 content_len (`split`).
enum RowEncoder {
    /// Binds `r` (whose message is `m`) and runs `s` while its text is alive (the
    /// text is bound without a copy); its first `split` bytes are the content kept
    /// apart (``SQLitePayloads``), which the caller writes.
    static func run(_ r: EncodedMessage, _ m: Message, _ s: SQLiteStatement, _ what: String, split: Int = 0) throws(MsgError) {
        s.bind(1, m.id)
        s.bind(2, m.status.rawValue)
        s.bind(3, m.to)
        s.bind(4, m.createdAt.milliseconds)
        s.bind(5, m.updatedAt.milliseconds)
        s.bind(6, StoredColumns.dueAt(m))
        s.bind(7, StoredColumns.leaseUntil(m))
        s.bind(8, StoredColumns.open(m.status))
        s.bind(10, Int64(r.historyOffset))
        s.bind(13, Int64(split))
        try r.json.withUnsafeBufferPointer { (json) throws(MsgError) in
            s.bindStatic(9, UnsafeBufferPointer(rebasing: json[split...]))
            try s.run(what)
        }
    }
}
