import MsgKit

/// A large record's content (`id` through `headers`, which sending never changes)
/// in a column of its own (schema 7), as the SQLite store keeps it in a table of its
/// own (docs/DESIGN.md 4): every claim and outcome writes a row anew, and the server
/// compressed (TOAST) and logged a record's whole text each time. An update that
/// leaves `content` as it is keeps the stored value, compressed or out of line, as
/// it is. `record` holds the rest; the text is `coalesce(content, '') || record`.
enum PostgresContent {
    /// The least content kept apart, in bytes (as ``SQLitePayloads``' threshold, measured there).
    static let threshold = 1024

    /// Version 7.
    static func tables(_ s: String) -> [String] {
        ["ALTER TABLE \(s).messages ADD COLUMN content text"]
    }

    /// A row's whole text, as a column of a `SELECT … FROM messages`.
    static let text = "coalesce(content, '') || record"

    /// The value `content` takes in an update from `u.content` ("" for a text stored
    /// whole): the stored one when it is the same, so nothing of it is written again.
    static let updated = "CASE WHEN u.content = '' THEN NULL WHEN m.content = u.content THEN m.content ELSE u.content END"

    /// Where `r`'s text is cut: the length of its content when that is kept apart, 0
    /// when the text is stored whole (small, or not in the order msg writes).
    static func split(_ r: EncodedMessage) -> Int {
        guard r.json.count > threshold else { return 0 }
        let parts = r.json.withUnsafeBufferPointer { RecordLayout.parts(of: $0, historyOffset: r.historyOffset) }
        guard let parts, parts.lifeStart >= threshold else { return 0 }
        return parts.lifeStart
    }
}
