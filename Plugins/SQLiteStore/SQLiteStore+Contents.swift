#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// The contents of large records kept apart and written once (``SQLitePayloads``):
/// what ``SQLiteStore/replace(_:expected:prep:)`` and ``SQLiteStore/add(_:)`` write
/// beside a record's row, in the same transaction.
extension SQLiteStore {
    /// After `r`'s row was written with its first `split` bytes left out: writes
    /// them to `payloads` (``SQLitePayloads``), unless this is the outcome of a
    /// record this handle put in flight and they are what it wrote or found there
    /// then (the upsert reads and compares, and writes only what differs); keeps
    /// them while the record is in flight, for its outcome. `m` is `r`'s message;
    /// `rid`: the row's, when known.
    func keepContent(_ r: EncodedMessage, _ m: Message, _ split: Int, rid known: Int64?, expected: Status) throws(MsgError) {
        guard split > 0 else {
            // Stored whole (a row that had its content apart took the way by id,
            // which removed it).
            if !contents.isEmpty, let known { contents[known] = nil }
            return
        }
        let rid: Int64
        if let known {
            rid = known
        } else if let found = try rowid(of: m.id) {
            rid = found
        } else {
            return
        }
        let same = expected == .sending && contents[rid].map { old in
            old.count == split && r.json.withUnsafeBufferPointer { memcmp($0.baseAddress!, old, split) == 0 }
        } ?? false
        if !same { try writeContent(r, split, rid: rid) }
        contents[rid] = m.status == .sending ? (same ? contents[rid] : Array(r.json[..<split])) : nil
    }

    /// Removes row `rid`'s content kept apart.
    func removeContent(_ rid: Int64) throws(MsgError) {
        let s = try db.statement(SQLitePayloads.remove)
        s.reset()
        s.bind(1, rid)
        try s.run("removing a message's content")
        contents[rid] = nil
    }

    /// Writes the first `split` bytes of `r`'s text as the content of row `rid`.
    func writeContent(_ r: EncodedMessage, _ split: Int, rid: Int64) throws(MsgError) {
        let s = try db.statement(SQLitePayloads.upsert)
        s.reset()
        s.bind(1, rid)
        try r.json.withUnsafeBufferPointer { (json) throws(MsgError) in
            s.bindStatic(2, UnsafeBufferPointer(rebasing: json[..<split]))
            try s.run("storing a message's content")
        }
    }

    /// The rowid of the record `id`, if there is one.
    func rowid(of id: String) throws(MsgError) -> Int64? {
        let s = try db.statement("SELECT rid FROM messages WHERE id = ?1")
        s.bind(1, id)
        defer { s.reset() }
        return try s.step("reading a message") ? s.int64(0) : nil
    }
}
