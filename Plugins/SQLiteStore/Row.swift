import MsgKit

/// The columns of a row that make its record (``columns``), read from a statement
/// positioned on it. A listing selects only the first three (``listingColumns``):
/// every column selected costs SQLite work on every row.
struct Row {
    /// The columns, in the order read here.
    static let columns = "\(SQLitePayloads.text), history_at, id, recipient, created_at, status, rid"
    /// The columns a listing of text needs.
    static let listingColumns = "\(SQLitePayloads.text), history_at, id"

    private let s: SQLiteStatement
    init(_ s: SQLiteStatement) { self.s = s }

    /// The stored text (valid until the statement moves on).
    var text: UnsafeBufferPointer<UInt8> { s.bytes(0) }
    var historyOffset: Int { Int(s.int64(1)) }
    var id: String { String(decoding: s.bytes(2), as: UTF8.self) }

    /// The row's columns (all of ``columns``), copied out of the statement.
    func copy() -> Copy {
        Copy(id: id, to: String(decoding: s.bytes(3), as: UTF8.self), createdAt: s.int64(4),
             status: String(decoding: s.bytes(5), as: UTF8.self), text: Array(text), historyOffset: historyOffset, rid: s.int64(6))
    }

    /// The record, or the damaged record in place of text that does not read (the
    /// other columns are copied only then, through ``Copy``).
    func record() -> EncodedMessage {
        (try? EncodedMessage(stored: Array(text), historyOffset: historyOffset)) ?? copy().record()
    }

    /// Whether the text has the shape msg writes for this row
    /// (``RecordLayout/isShapedAsWritten(_:historyOffset:id:)``).
    var looksWrittenByMsg: Bool {
        RecordLayout.isShapedAsWritten(text, historyOffset: historyOffset, id: s.bytes(2))
    }

    /// Whether a text that may have its content kept apart (``SQLitePayloads``: only
    /// one past the threshold) holds a byte JSON never leaves raw (below 0x20). The
    /// content's shape is not checked with the rest's: a page of it cut short in a
    /// damaged file reads as zeros, while the rest, in another page, keeps the shape
    /// msg writes. Small texts, whole in their row, are not read again.
    var holdsRawBytes: Bool {
        let t = text
        guard t.count > SQLitePayloads.threshold else { return false }
        return t.contains { $0 < 0x20 }
    }

    /// A row read out of its statement.
    struct Copy: Sendable {
        var id: String
        var to: String
        var createdAt: Int64
        var status: String
        var text: [UInt8]
        var historyOffset: Int
        /// The row's rowid (``columns`` only).
        var rid: Int64

        func record() -> EncodedMessage {
            .stored(text: text, historyOffset: historyOffset, id: id, to: to, createdAt: Timestamp(milliseconds: createdAt))
        }
    }
}
