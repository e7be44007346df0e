import MsgKit

/// Binds a message's columns (?1 … ?9) to an INSERT or UPDATE, reusing its buffers.
struct RowEncoder {
    private var record = JSONWriter(capacity: 1024)
    private var history = JSONWriter(capacity: 512)

    mutating func bind(_ m: Message, to s: SQLiteStatement) {
        record.bytes.removeAll(keepingCapacity: true)
        history.bytes.removeAll(keepingCapacity: true)
        m.write(to: &record, includeHistory: false)
        m.writeHistory(to: &history)
        s.bind(1, m.id)
        s.bind(2, m.status.rawValue)
        s.bind(3, m.to)
        s.bind(4, m.createdAt.milliseconds)
        s.bind(5, m.updatedAt.milliseconds)
        let due = [m.notBefore, m.nextAttemptAt].compactMap { $0?.milliseconds }.max()
        s.bind(6, due)
        s.bind(7, m.lease?.until.milliseconds)
        s.bind(8, bytes: record.bytes)
        s.bind(9, bytes: history.bytes)
    }
}
