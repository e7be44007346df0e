import MsgKit
import NIOCore
import PostgresNIO

/// The store's commit journal (schema 11; ``CommitFold``), as in the SQLite store:
/// each statement that changes the queue appends, in that very statement, one row
/// of `commits` (``PostgresLedger/commit(_:from:first:total:rows:)``): an id from a
/// sequence (no lock, so workers on several hosts never queue on it), its
/// transaction's id (`xid`), its leaves and what its changes mean beside the rows
/// (`effects`). A statement is a compare-and-set, so only the server knows which
/// of its rows applied: each row's effects are made beforehand as its own
/// ``CommitEffects/journalBytes(into:)``, each after its length (4 bytes,
/// big-endian, as `int4send` writes), and the statement keeps those of the rows it
/// changed, as it keeps their leaves.
///
/// The store reads and decides nothing of the bytes; MsgKit does:
/// - the counts: the fold in `kept` (name `fold`) plus the rows it has not seen.
///   Transactions commit out of the order of their ids, so what the fold has seen
///   is a snapshot of the server's (`pg_current_snapshot()` of the statement that
///   read the rows it folded, kept as text under `folded`): the rows visible in it
///   are folded, and a reader adds the others (`xid` at or above its `xmin`, not
///   visible in it). A transaction left open elsewhere holds back only its own
///   rows. A writer folds after the commit that appends a 512th row, or after this
///   handle appended 2 MiB of row bytes since its last fold;
/// - the floors since a mark (``JournalStore/changeFloor(since:)``), whose mark is the `xmin` of the
///   reader's snapshot: the rows at or above it. Rows seen twice name a floor
///   further back than needed, never a change missed;
/// - the ledger: the rows' leaves (``PostgresLedger``).
///
/// `kept` also holds where the last one-shot run's claim scan stopped (`hint:<kind>`).
enum PostgresJournal {
    /// Version 11: the ledger's runs become the journal (no row is rewritten); the
    /// counts, the hints and a first row that floors all are added by ``begin(_:from:)``.
    static func tables(_ s: String) -> [String] {
        [
            "ALTER TABLE \(s).ledger_runs RENAME TO commits",
            "ALTER SEQUENCE \(s).ledger_runs_id_seq RENAME TO commits_id_seq",
            "ALTER INDEX \(s).ledger_runs_first RENAME TO commits_first",
            "DROP INDEX \(s).ledger_runs_pending",
            "CREATE INDEX commits_pending ON \(s).commits (id) WHERE first IS NULL AND count > 0",
            "ALTER TABLE \(s).commits ADD COLUMN xid bigint, ADD COLUMN effects bytea",
            "CREATE INDEX commits_xid ON \(s).commits (xid)",
            "CREATE TABLE \(s).kept (name text NOT NULL PRIMARY KEY, value bytea NOT NULL)",
        ]
    }

    /// The tables of versions 3, 5 and 6 that version 11 replaces, read and dropped by ``begin(_:from:)``.
    static let replaced = ["tallies", "tally_log", "created_minutes", "created_log", "claim_floors", "claim_floors_pruned", "claim_hints"]

    /// SQL: the id of the statement's transaction.
    static let xid = "pg_current_xact_id()::text::bigint"

    /// Calls `body` with each row's effects that `framed` holds (each after its
    /// length); false when they are not framed so.
    static func pieces(_ framed: ByteBuffer, _ body: (UnsafeRawBufferPointer) -> Void) -> Bool {
        framed.withUnsafeReadableBytes { b in
            var at = 0
            while at < b.count {
                guard b.count - at >= 4 else { return false }
                let n = Int(UInt32(bigEndian: b.loadUnaligned(fromByteOffset: at, as: UInt32.self)))
                guard b.count - at - 4 >= n else { return false }
                body(UnsafeRawBufferPointer(rebasing: b[(at + 4)..<(at + 4 + n)]))
                at += 4 + n
            }
            return true
        }
    }

    /// Appends `effects` to `out` as one framed piece.
    static func frame(_ effects: CommitEffects, into out: inout [UInt8]) {
        var piece: [UInt8] = []
        effects.journalBytes(into: &piece)
        withUnsafeBytes(of: UInt32(piece.count).bigEndian) { out.append(contentsOf: $0) }
        out.append(contentsOf: piece)
    }

    // MARK: Reading

    /// The fold and the rows it has not seen, in the caller's snapshot; nil when
    /// the counts are not whole.
    static func read(_ db: BlockingConnection) throws(MsgError) -> CommitFold? {
        guard var fold = try snapshot(db, lock: false) else { return nil }
        for row in try db.query(PostgresQuery(unsafeSQL: "SELECT c.effects \(unfolded(db.address.schema))"), "reading the counts") {
            let framed: ByteBuffer?
            do { framed = try row.decode(ByteBuffer?.self) } catch { throw PostgresStore.corrupt("the commit journal", error) }
            try add(framed, to: &fold)
        }
        return fold
    }

    /// SQL: the rows of `commits` (`c`) that the fold has not seen.
    private static func unfolded(_ s: String) -> String {
        """
        FROM (SELECT convert_from(value, 'UTF8')::pg_snapshot AS seen FROM \(s).kept WHERE name = 'folded') AS f
        JOIN \(s).commits AS c ON c.xid >= pg_snapshot_xmin(f.seen)::text::bigint
             AND NOT pg_visible_in_snapshot(c.xid::text::xid8, f.seen) AND c.effects IS NOT NULL
        """
    }

    private static func snapshot(_ db: BlockingConnection, lock: Bool) throws(MsgError) -> CommitFold? {
        let rows = try db.query(PostgresQuery(unsafeSQL: "SELECT value FROM \(db.address.schema).kept WHERE name = 'fold'\(lock ? " FOR UPDATE" : "")"),
                                "reading the counts")
        guard let row = rows.first else { return nil }
        let value: ByteBuffer
        do { value = try row.decode(ByteBuffer.self) } catch { throw PostgresStore.corrupt("the counts", error) }
        guard let fold = value.withUnsafeReadableBytes({ CommitFold(snapshot: $0) }) else {
            throw MsgError(.corrupt, "the counts kept in \(db.address.schema).kept are not in a form this msg reads")
        }
        return fold
    }

    /// Adds a row's effects (none: a row of the ledger alone).
    private static func add(_ framed: ByteBuffer?, to fold: inout CommitFold) throws(MsgError) {
        guard let framed else { return }
        guard pieces(framed, { fold.add(journal: $0) }) else { throw MsgError(.corrupt, "a row of the commit journal is cut short") }
    }

    // MARK: Writing

    /// Folds the rows it has not seen and its statement sees into the fold, in a
    /// transaction of its own. Two folding at once: the second waits for the
    /// first's lock on the fold, and its statement, begun after, sees what it kept.
    static func fold(_ db: BlockingConnection) throws(MsgError) {
        let s = db.address.schema
        try db.transaction("folding the counts") { () throws(MsgError) in
            guard var fold = try snapshot(db, lock: true) else { return }
            // One statement: the snapshot it gives is the one it read the rows in.
            let rows = try db.query(PostgresQuery(unsafeSQL: """
                SELECT pg_current_snapshot()::text, n.effects FROM (SELECT 1) AS one
                LEFT JOIN LATERAL (SELECT c.effects \(unfolded(s))) AS n ON true
                """), "folding the counts")
            var seen = ""
            for row in rows {
                let framed: ByteBuffer?
                do { (seen, framed) = try row.decode((String, ByteBuffer?).self) } catch { throw PostgresStore.corrupt("the commit journal", error) }
                try add(framed, to: &fold)
            }
            fold.prune(now: .now())
            try save(fold, seen: seen, db)
        }
    }

    /// Keeps `fold` and the snapshot whose rows it holds, in the caller's transaction.
    static func save(_ fold: CommitFold, seen: String, _ db: BlockingConnection) throws(MsgError) {
        var bytes: [UInt8] = []
        fold.snapshot(into: &bytes)
        try keep("fold", bytes, db)
        try keep("folded", Array(seen.utf8), db)
    }

    static func keep(_ name: String, _ value: [UInt8], _ db: BlockingConnection) throws(MsgError) {
        var b = PostgresBindings(capacity: 2)
        b.append(name)
        b.append(ByteBuffer(bytes: value))
        try db.query(PostgresQuery(unsafeSQL: """
            INSERT INTO \(db.address.schema).kept (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value
            """, binds: b), "keeping the store's counts")
    }

    /// SQL: appends a row of no leaves for what `effects` says (a destination's state).
    static func appendAlone(_ s: String) -> String {
        "INSERT INTO \(s).commits (count, leaves, xid, effects) VALUES (0, ''::bytea, \(xid), $1)"
    }
}
