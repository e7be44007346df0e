import MsgKit
import PostgresNIO

/// The columns of a row that make its record (``columns``), read out of a result row.
struct StoredRow {
    /// The columns, in the order read here.
    static let columns = "id, recipient, created_at, status, \(PostgresContent.text), history_at"

    let id: String
    let to: String
    let createdAt: Int64
    let status: String
    let text: [UInt8]
    let historyOffset: Int

    init(_ row: PostgresRow) throws(MsgError) {
        var cells = row.makeIterator()
        guard let id = cells.next(), let to = cells.next(), let created = cells.next(), let status = cells.next(),
              let record = cells.next()?.bytes, let cut = cells.next() else {
            throw MsgError(.corrupt, "a stored record has a NULL column")
        }
        do {
            self.id = try id.decode(String.self)
            self.to = try to.decode(String.self)
            self.createdAt = try created.decode(Int64.self)
            self.status = try status.decode(String.self)
            self.historyOffset = Int(try cut.decode(Int32.self))
        } catch {
            throw PostgresStore.corrupt("a stored record", error)
        }
        self.text = Array(record.readableBytesView)
    }

    /// The record, or the damaged record in place of text that does not read.
    func record() -> EncodedMessage {
        .stored(text: text, historyOffset: historyOffset, id: id, to: to, createdAt: Timestamp(milliseconds: createdAt))
    }
}
