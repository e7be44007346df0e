import MsgKit

/// Binds a record's columns (?1 … ?9) to an INSERT or UPDATE and runs it.
enum RowEncoder {
    /// Binds `r` and runs `s` while its text is alive (the text is bound without a copy).
    static func run(_ r: EncodedMessage, _ s: SQLiteStatement, _ what: String) throws(MsgError) {
        let m = r.message
        s.bind(1, m.id)
        s.bind(2, m.status.rawValue)
        s.bind(3, m.to)
        s.bind(4, m.createdAt.milliseconds)
        s.bind(5, m.updatedAt.milliseconds)
        s.bind(6, m.dueAt?.milliseconds)
        s.bind(7, m.lease?.until.milliseconds)
        s.bind(9, Int64(r.historyOffset))
        try r.json.withUnsafeBufferPointer { (json) throws(MsgError) in
            s.bindStatic(8, json)
            try s.run(what)
        }
    }
}
