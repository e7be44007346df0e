#if canImport(Glibc)
@preconcurrency import Glibc  // memcmp
#endif
import MsgKit

/// The columns of a row that make its record (``columns``), read from a statement
/// positioned on it. A listing selects only the first three (``listingColumns``):
/// every column selected costs SQLite work on every row.
struct Row {
    /// The columns, in the order read here.
    static let columns = "record, history_at, id, recipient, created_at, status"
    /// The columns a listing of text needs.
    static let listingColumns = "record, history_at, id"

    private let s: SQLiteStatement
    init(_ s: SQLiteStatement) { self.s = s }

    /// The stored text (valid until the statement moves on).
    var text: UnsafeBufferPointer<UInt8> { s.bytes(0) }
    var historyOffset: Int { Int(s.int64(1)) }
    var id: String { String(decoding: s.bytes(2), as: UTF8.self) }

    /// The row's columns (all of ``columns``), copied out of the statement.
    func copy() -> Copy {
        Copy(id: id, to: String(decoding: s.bytes(3), as: UTF8.self), createdAt: s.int64(4),
             status: String(decoding: s.bytes(5), as: UTF8.self), text: Array(text), historyOffset: historyOffset)
    }

    /// The record, or the damaged record in place of text that does not read (the
    /// other columns are copied only then, through ``Copy``).
    func record() -> EncodedMessage {
        (try? EncodedMessage(stored: Array(text), historyOffset: historyOffset)) ?? copy().record()
    }

    /// Whether the text has the shape msg writes for this row: its own id first, its
    /// history where the row says, a closing brace last. Text edited by hand seldom
    /// keeps all three; a listing decodes any text that does not (a damaged record
    /// then shows as its stand-in), and checks no more (not even for a line break,
    /// which costs a tenth of a listing), to list as fast as it reads.
    var looksWrittenByMsg: Bool {
        let t = text
        let h = historyOffset
        let id = s.bytes(2)
        guard let base = t.baseAddress, let idBase = id.baseAddress, h > 8 + id.count, h + 12 < t.count,
              t[t.count - 1] == UInt8(ascii: "}"), t[7 + id.count] == UInt8(ascii: "\""),
              memcmp(base + h, #","history":["#, 12) == 0, memcmp(base, #"{"id":""#, 7) == 0,
              memcmp(base + 7, idBase, id.count) == 0 else { return false }
        return true
    }

    /// A row read out of its statement.
    struct Copy: Sendable {
        var id: String
        var to: String
        var createdAt: Int64
        var status: String
        var text: [UInt8]
        var historyOffset: Int

        func record() -> EncodedMessage {
            .stored(text: text, historyOffset: historyOffset, id: id, to: to, createdAt: Timestamp(milliseconds: createdAt))
        }
    }
}
