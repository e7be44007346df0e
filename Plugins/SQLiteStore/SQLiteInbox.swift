import CSQLite
import MsgKit
import MsgSupport

/// An inbox in an application's own SQLite database (`sqlite:PATH`, msg-inbox(1)):
/// the table `msg_inbox`, which the application fills in its own transactions with
/// `INSERT INTO msg_inbox (draft) VALUES (?)`.
///
/// The other columns have defaults: `seq` (AUTOINCREMENT, so never used twice),
/// `inserted_at` (ms since the epoch) and `nonce` (random). A row's message id is
/// made from those three, the same each time the row is read: a UUIDv7 of
/// `inserted_at` whose next 40 bits are `seq`'s, so rows inserted in one millisecond
/// keep their order in the queue, and whose last 34 are the nonce's.
///
/// A take looks without a lock first; when there are rows it holds the database's
/// write lock (`BEGIN IMMEDIATE`) from reading them until they are deleted: two
/// drainers take turns, and the application's own writes wait for one batch at most
/// (its busy timeout covers that). msg changes nothing else in the database: not
/// its journal mode, not its pragmas (`synchronous` is set on msg's own connection).
final class SQLiteInbox: DraftInbox {
    static let table = "msg_inbox"
    private let db: SQLiteDatabase
    private var version: Int64?

    /// Opens the inbox at `url`'s path, which must be a SQLite database there already.
    /// - Throws: `config` for a missing file, one that is not SQLite, or a msg store.
    init(url: PluginURL) throws(MsgError) {
        for p in url.parameters {
            throw MsgError(.config, "unknown parameter '\(p.name)' in \(url.text): a SQLite inbox takes none")
        }
        db = try SQLiteDatabase(path: try StoreFile.path(url, example: "sqlite:/path/to/app.db"), access: .write, application: true)
        // A removal need not be on disk when the take returns: rows a power cut brings
        // back are taken again, and the store refuses their ids. In WAL mode, NORMAL
        // keeps the database whole whatever happens (sqlite.org/pragma.html#pragma_synchronous),
        // and it is this connection's setting only; other journal modes keep the
        // application's.
        if try db.text("PRAGMA journal_mode") == "wal" {
            try db.execute("PRAGMA synchronous = NORMAL", "opening the inbox")
        }
    }

    /// The trigger by which the table refuses a draft over msg's record limit at the
    /// application's INSERT, inside its transaction: a draft msg would refuse is
    /// never committed as if it would be sent.
    static let limitTrigger = "msg_inbox_limit"

    func install() throws(MsgError) -> String {
        try db.transaction("creating the inbox") { () throws(MsgError) -> String in
            let there = try exists()
            if !there {
                try db.execute("""
                    CREATE TABLE \(Self.table) (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        draft TEXT NOT NULL,
                        inserted_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),
                        nonce INTEGER NOT NULL DEFAULT (random())
                    )
                    """, "creating the inbox")
            }
            let checked = try hasLimit()
            if !checked {
                // RAISE takes a literal only (before SQLite 3.47), so the size cannot be named.
                try db.execute("""
                    CREATE TRIGGER \(Self.limitTrigger) BEFORE INSERT ON \(Self.table)
                    WHEN length(CAST(NEW.draft AS BLOB)) > \(RecordLimits.maxRecordBytes)
                    BEGIN SELECT RAISE(ABORT, 'msg_inbox: the draft is over msg''s limit of \(RecordLimits.maxRecordBytes) bytes (1 MiB); nothing was inserted'); END
                    """, "adding the inbox's size check")
            }
            switch (there, checked) {
            case (false, _): return "created \(Self.table) in \(db.path)"
            case (true, false): return "\(Self.table) is there already in \(db.path); added its check of a draft's size"
            case (true, true): return "\(Self.table) is there already in \(db.path)"
            }
        }
    }

    private func hasLimit() throws(MsgError) -> Bool {
        let s = try db.statement("SELECT 1 FROM sqlite_schema WHERE type = 'trigger' AND name = '\(Self.limitTrigger)'")
        defer { s.reset() }
        return try s.step("looking for the inbox's size check")
    }

    private func exists() throws(MsgError) -> Bool {
        let s = try db.statement("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = '\(Self.table)'")
        defer { s.reset() }
        return try s.step("looking for the inbox")
    }

    func take(limit: Int, _ body: ([InboxRow]) throws(MsgError) -> Void) throws(MsgError) -> Int {
        guard try exists() else {
            throw MsgError(.config, "there is no \(Self.table) table in \(db.path): msg inbox install sqlite:\(db.path) creates it")
        }
        // Looked at without the write lock first: an empty inbox never holds up the
        // application's writers.
        let any = try db.statement("SELECT 1 FROM \(Self.table) LIMIT 1")
        let empty = try !any.step("reading the inbox")
        any.reset()
        if empty { return 0 }
        return try db.transaction("taking rows from the inbox") { () throws(MsgError) -> Int in
            let read = try db.statement("SELECT seq, draft, inserted_at, nonce FROM \(Self.table) ORDER BY seq LIMIT ?1")
            read.bind(1, Int64(limit))
            var rows: [InboxRow] = []
            var last: Int64 = 0
            while try read.step("reading the inbox") {
                last = read.int64(0)
                let at = read.int64(2)
                rows.append(InboxRow(id: Self.id(seq: last, insertedAt: at, nonce: read.int64(3)), draft: Array(read.bytes(1)),
                                     insertedAt: Timestamp(milliseconds: at)))
            }
            read.reset()
            guard !rows.isEmpty else { return 0 }
            try body(rows)
            // Under the write lock since the read: no row came in between.
            let delete = try db.statement("DELETE FROM \(Self.table) WHERE seq <= ?1")
            delete.bind(1, last)
            try delete.run("removing the rows taken from the inbox")
            return rows.count
        }
    }

    func changed() throws(MsgError) -> Bool {
        let now = try db.integer("PRAGMA data_version")
        defer { version = now }
        return version != now
    }

    /// The message id of the row `seq` inserted at `insertedAt` (ms) with `nonce`.
    static func id(seq: Int64, insertedAt: Int64, nonce: Int64) -> String {
        let ms = UInt64(bitPattern: max(insertedAt, 0)) & 0xFFFF_FFFF_FFFF
        let s = UInt64(bitPattern: seq) & 0xFF_FFFF_FFFF
        let high = ms << 16 | 0x7000 | s >> 28
        let low = 0x8000_0000_0000_0000 | (s & 0xFFF_FFFF) << 34 | UInt64(bitPattern: nonce) & 0x3_FFFF_FFFF
        var text = [UInt8](repeating: UInt8(ascii: "-"), count: 36)
        var at = 0
        for i in 0..<32 {
            if at == 8 || at == 13 || at == 18 || at == 23 { at += 1 }
            let nibble = (i < 16 ? high >> UInt64(60 - 4 * i) : low >> UInt64(124 - 4 * i)) & 0xF
            text[at] = nibble < 10 ? UInt8(ascii: "0") + UInt8(nibble) : UInt8(ascii: "a") + UInt8(nibble - 10)
            at += 1
        }
        return String(decoding: text, as: UTF8.self)
    }
}
