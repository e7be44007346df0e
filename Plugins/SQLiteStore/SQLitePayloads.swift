import MsgKit

/// What the user gave, written once (schema 8, docs/DESIGN.md 6).
///
/// A record's text is its content (`id`, `to`, `from`, `body`, `headers`: never
/// changed by sending it) followed by its life, the members msg does not know and
/// its history (``RecordLayout``). Every claim and every outcome writes a record's
/// row again, and SQLite rewrites a row whole, overflow pages included: a record of
/// 8 KiB cost each change 8 KiB and more of pages. So when the content is at least
/// ``threshold`` bytes it is kept apart in `payloads`, written by `queue add` (and by
/// a change that changes it: `queue edit`), and the row's `record` holds the rest;
/// `content_len` says how long the content is (0: the whole text is in `record`).
/// The text is always `content || record`, and `history_at` an offset in it.
///
/// Measured with a C program doing only the SQLite work of 100,000 messages (an
/// insert; a claim and an outcome update each, batches of 1,024; the listing:
/// `scripts/sqlite-split-model.c`, `scripts/bench --sqlite-model`):
///
/// | content | add whole / apart | claim + outcome whole / apart |
/// |---|---|---|
/// | 115 B | 0.32 / 0.41 s | 0.45 / 0.46 s |
/// | 815 B | 0.44 / 0.53 s | 0.64 / 0.44 s |
/// | 1.3 KiB | 0.51 / 0.63 s | 0.77 / 0.45 s |
/// | 2.1 KiB | 0.76 / 0.75 s | 0.97 / 0.43 s |
/// | 8.1 KiB | 3.51 / 2.06 s | 5.51 / 0.49 s |
///
/// Below about 1 KiB a second row costs the insert more than the changes save, so
/// small records stay whole. The history stays in the row too: kept as rows, each
/// event an insert of its own, the claim and outcome of small records cost 28% more.
///
/// A store of schema 7 becomes 8 without rewriting a record: its rows read as
/// whole (`content_len` 0) until their next change.
enum SQLitePayloads {
    /// The least content kept apart, in bytes.
    static let threshold = 1024

    /// Version 8. No trigger removes a content row with its record: a statement
    /// that fires one gets a statement journal, which wrote every page the update of
    /// a row touched to a temporary file (1.6 GB for a flush of 20,000 records of
    /// 4 KiB); the store removes them itself (``remove``).
    static let table = """
        ALTER TABLE messages ADD COLUMN content_len INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE payloads (rid INTEGER PRIMARY KEY, content TEXT NOT NULL);
        """

    /// Removes a record's content row, if it has one.
    static let remove = "DELETE FROM payloads WHERE rid = ?1"

    /// A row's whole text, as a column of a `SELECT … FROM messages` (NULL when its
    /// content row is missing: the record then reads as damaged).
    static let text = "CASE content_len WHEN 0 THEN record ELSE (SELECT content FROM payloads WHERE payloads.rid = messages.rid) || record END"

    /// Writes a row's content, unless it is already what is stored.
    static let upsert = """
        INSERT INTO payloads (rid, content) VALUES (?1, ?2)
        ON CONFLICT(rid) DO UPDATE SET content = excluded.content WHERE content IS NOT excluded.content
        """

    /// Where `json` is cut: the length of its content when that is kept apart, 0
    /// when the text is stored whole (small, or not in the order msg writes).
    static func split(_ json: [UInt8], historyOffset: Int) -> Int {
        guard json.count > threshold else { return 0 }
        let parts = json.withUnsafeBufferPointer { RecordLayout.parts(of: $0, historyOffset: historyOffset) }
        guard let parts, parts.lifeStart >= threshold else { return 0 }
        return parts.lifeStart
    }
}
