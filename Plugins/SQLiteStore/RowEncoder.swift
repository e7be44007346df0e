import MsgKit

/// The columns of a record's row besides its text, each derived from the record
/// (``SQLiteSchema``): what the indexes and filters read.
enum StoredColumns {
    /// A waiting record's time to wait for (`not_before`, `next_attempt_at`); NULL
    /// when it is due now or not waiting.
    static func dueAt(_ m: Message) -> Int64? {
        switch m.status {
        case .queued, .failed, .held: m.dueAt?.milliseconds
        default: nil
        }
    }

    /// A record in flight: its lease end, 0 when it has no lease; NULL otherwise.
    static func leaseUntil(_ m: Message) -> Int64? {
        m.status == .sending ? (m.lease?.until.milliseconds ?? 0) : nil
    }

    /// 1 while a flush or retry may take the record or has it (in `messages_open`),
    /// NULL once it was sent, went dead or is held.
    static func open(_ status: Status) -> Int64? { isOpen(status) ? 1 : nil }

    /// Whether records of `status` are in `messages_open`: queued, failed and
    /// sending. Dead and held ones are not (they are in `messages_parked`): a
    /// million left dead by an outage cost a flush nothing (schema 4). `sending`
    /// stays in, so a claim changes no entry of them.
    static func isOpen(_ status: Status) -> Bool {
        switch status {
        case .queued, .failed, .sending: true
        case .sent, .delivered, .read, .dead, .held: false
        }
    }
}

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
