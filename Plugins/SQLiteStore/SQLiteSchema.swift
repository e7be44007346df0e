#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import CSQLite
import MsgKit

/// The store's schema and its migrations, versioned by `PRAGMA user_version`.
///
/// Each record is kept as its canonical JSON text (`record`, see ``RecordLayout``)
/// with the offset where its `history` begins (`history_at`): a listing with
/// history writes `record` as it is, one without writes `record[..<history_at]`
/// and a closing brace. The other columns exist for the indexes and filters, each
/// derived from the record (``StoredColumns``).
///
/// Schema 3 is shaped for the claim, measured with a C program doing only the
/// SQLite work of 100,000 messages (a claim and an outcome update each): 166k/s,
/// against 110k/s for schema 2.
/// - A rowid table: updates find their row by an integer, not by a text key.
/// - `messages_open`: the records a flush or retry may take or has (queued,
///   failed, sending; schema 3 had every record not sent) in FIFO order, with
///   their recipient, so a claim skips the messages of a waiting destination
///   without reading their rows. A claim changes no entry of it; an
///   outcome that finishes a record removes one. Status is not in it: adding it
///   cost 15% of every update.
/// - `messages_inflight`: records `sending`, by lease end (`lease_until`, 0 when
///   they have none), for the in-flight read of a claim and for `recover`.
/// - `messages_due`: waiting records with a time to wait for, for `flush --watch`.
/// - No index by recipient alone: it doubled the cost of `queue add` (random
///   inserts into a large b-tree).
///
/// Schema 5 added `tallies`, what the store counts with every change, so that
/// metrics and per-destination counts read no record; schema 6 `created_minutes`,
/// the records by status and creation minute, so that `queue stats` reads none
/// either; schema 7 `claim_floors`, where each commit changed the queue, so that a
/// kept claim scan goes back only that far when another process commits, and
/// `claim_hints`, where the last one-shot run's scan stopped; schema 8 `payloads`,
/// the content of large records written once, apart from the row each change
/// rewrites (``SQLitePayloads``); schema 9 the ledger, a run of leaves a commit.
/// Schema 10 keeps all of these but the payloads as one row a commit of `commits`
/// (``SQLiteJournal``), with the hints and the counts' snapshot in `kept`: a store
/// has 6 tables, not 10, and a commit writes one row beside its changes, not four.
///
/// Schema 4 keeps dead and held records out of the open ones: a million dead after
/// an outage cost a flush nothing (a flush of ten past them: 214 ms in schema 3,
/// 30 ms). `messages_parked` has them instead, in FIFO order, so `retry --dead`,
/// `queue release` and listings of them read no sent record; it changes only when
/// a record goes dead or is held, or leaves that. An index of the open records by recipient, so that a claim could read the
/// heads of the destinations it may send to instead of walking past a destination's
/// backlog, was measured and left out: its entries are scattered over the b-tree, so
/// every commit writes pages all over it (`queue add` 1.48x slower, flush to the
/// mock 0.58x, with 5,000 recipients).
enum SQLiteSchema {
    /// The version this msg writes.
    static let current: Int64 = 10

    /// Each migration takes the schema from version `index` to `index + 1`.
    static let migrations: [String] = [
        """
        CREATE TABLE messages (
            id TEXT NOT NULL PRIMARY KEY,
            status TEXT NOT NULL,
            recipient TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            due_at INTEGER,
            lease_until INTEGER,
            record TEXT NOT NULL,
            history_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX messages_fifo ON messages(created_at, id);
        CREATE INDEX messages_status ON messages(status, created_at, id);
        CREATE INDEX messages_due ON messages(due_at) WHERE due_at IS NOT NULL;
        """,
        // Version 2: per-destination state (breaker, throttle, pause), one row per key
        // that has any; the text is msg's own (docs/DESIGN.md 6).
        """
        CREATE TABLE destinations (
            key TEXT NOT NULL PRIMARY KEY,
            state TEXT NOT NULL
        ) WITHOUT ROWID;
        """,
        // Version 3: a rowid table, and the indexes of the one claim (above).
        """
        DROP INDEX messages_fifo;
        DROP INDEX messages_status;
        DROP INDEX messages_due;
        ALTER TABLE messages RENAME TO messages_v2;
        CREATE TABLE messages (
            rid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            status TEXT NOT NULL,
            recipient TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            due_at INTEGER,
            lease_until INTEGER,
            open INTEGER,
            record TEXT NOT NULL,
            history_at INTEGER NOT NULL
        );
        INSERT INTO messages (id, status, recipient, created_at, updated_at, due_at, lease_until, open, record, history_at)
            SELECT id, status, recipient, created_at, updated_at,
                   CASE WHEN status IN ('queued', 'failed', 'held') THEN due_at END,
                   CASE WHEN status = 'sending' THEN coalesce(lease_until, 0) END,
                   CASE WHEN status IN ('sent', 'delivered', 'read') THEN NULL ELSE 1 END,
                   record, history_at
            FROM messages_v2 ORDER BY created_at, id;
        DROP TABLE messages_v2;
        CREATE INDEX messages_fifo ON messages(created_at, id);
        CREATE INDEX messages_open ON messages(created_at, id, recipient) WHERE open IS NOT NULL;
        CREATE INDEX messages_inflight ON messages(lease_until) WHERE lease_until IS NOT NULL;
        CREATE INDEX messages_due ON messages(due_at) WHERE due_at IS NOT NULL;
        """,
        // Version 4: dead and held records leave the open ones (``StoredColumns/isOpen(_:)``).
        """
        UPDATE messages SET open = NULL WHERE open IS NOT NULL AND status NOT IN ('queued', 'failed', 'sending');
        CREATE INDEX messages_parked ON messages(created_at, id) WHERE open IS NULL AND status IN ('dead', 'held');
        """,
        // Version 5: the counts and their log (carried into the journal by version 10).
        """
        CREATE TABLE tallies (kind TEXT NOT NULL, a TEXT NOT NULL, b TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (kind, a, b)) WITHOUT ROWID;
        CREATE TABLE tally_log (seq INTEGER PRIMARY KEY, deltas TEXT NOT NULL);
        """,
        // Version 6: the records by status and creation minute.
        "CREATE TABLE created_minutes (status TEXT NOT NULL, minute INTEGER NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (status, minute)) WITHOUT ROWID;",
        // Version 7: where each commit changed the queue and where the last run stopped.
        """
        CREATE TABLE claim_floors (seq INTEGER PRIMARY KEY, created_at INTEGER);
        CREATE TABLE claim_hints (kind TEXT NOT NULL PRIMARY KEY, hint TEXT NOT NULL) WITHOUT ROWID;
        """,
        // Version 8: large contents kept apart, written once (``SQLitePayloads``); no
        // row is rewritten.
        SQLitePayloads.table,
        // Version 9: the ledger, begun by ``migrate(_:)`` with the number of messages
        // stored before it.
        """
        ALTER TABLE messages ADD COLUMN ledger TEXT;
        ALTER TABLE messages ADD COLUMN history_n INTEGER NOT NULL DEFAULT -1;
        ALTER TABLE messages ADD COLUMN content_fp INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE ledger (first INTEGER PRIMARY KEY, count INTEGER NOT NULL, leaves BLOB NOT NULL);
        CREATE TABLE ledger_removed (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, ledger TEXT NOT NULL);
        """,
        // Version 10: the commit journal (``SQLiteJournal``). Its first row says that
        // anything may have changed (format 1, floor all), numbered after every floor
        // kept before, so a claim scan's mark from then is answered "all"; then the
        // ledger's runs as they were and the hints; the counts are carried by
        // ``migrate(_:)``. A table a test's older store lacks is made first, empty.
        SQLiteJournal.tables + """
        CREATE TABLE IF NOT EXISTS claim_floors (seq INTEGER PRIMARY KEY, created_at INTEGER);
        CREATE TABLE IF NOT EXISTS claim_hints (kind TEXT NOT NULL PRIMARY KEY, hint TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS ledger (first INTEGER PRIMARY KEY, count INTEGER NOT NULL, leaves BLOB NOT NULL);
        INSERT INTO commits (seq, first, count, effects) SELECT coalesce(max(seq), 0) + 1, 0, 0, X'010200000000' FROM claim_floors;
        INSERT INTO commits (first, count, effects, leaves) SELECT first, count, X'010000000000', leaves FROM ledger ORDER BY first;
        INSERT INTO kept (name, value) SELECT 'hint:' || kind, CAST(hint AS BLOB) FROM claim_hints;
        DROP TABLE IF EXISTS tallies;
        DROP TABLE IF EXISTS tally_log;
        DROP TABLE IF EXISTS created_minutes;
        DROP TABLE claim_floors;
        DROP TABLE claim_hints;
        DROP TABLE ledger;
        """,
    ]

    /// Puts the file in WAL mode. Changing the journal mode needs an exclusive lock and
    /// SQLite does not wait for it, so when several processes create one store at
    /// once, all but one are told "busy": they wait and look again, and stop as soon
    /// as another process has made the file WAL.
    static func switchToWAL(_ db: SQLiteDatabase) throws(MsgError) {
        var delay: UInt32 = 2_000
        for attempt in 0... {
            if try db.text("PRAGMA journal_mode") == "wal" { return }
            do throws(MsgError) {
                _ = try db.text("PRAGMA journal_mode=WAL")
                return
            } catch {
                guard let sqlite = error.underlying as? SQLiteError, sqlite.primary == SQLITE_BUSY, attempt < 500 else { throw error }
                usleep(delay)
                delay = min(delay * 2, 50_000)
            }
        }
    }

    /// Brings the database to ``current``, in one transaction per step.
    /// - Throws: `config` when the file was written by a newer msg or holds another
    ///   application's tables; storage errors.
    static func migrate(_ db: SQLiteDatabase) throws(MsgError) {
        let found = try db.integer("PRAGMA user_version")
        if found == current { return }
        // Before anything changes the file: it may be another application's.
        try refuseForeign(db, version: found)
        // The page size and WAL are properties of the file: set before the first table.
        // 16 KiB pages: a quarter of the WAL frames (and write calls) of 4 KiB ones
        // for these ~400-byte rows, measured ~7% faster on `queue add`.
        try db.execute("PRAGMA page_size=16384", "setting the page size")
        try switchToWAL(db)
        try db.transaction("creating the schema") { () throws(MsgError) in
            // Read again under the write lock: another process may have migrated.
            let version = try db.integer("PRAGMA user_version")
            try refuseForeign(db, version: version)
            var carried: CommitFold?
            for step in Int(version)..<Int(current) {
                if step == 9 { carried = try countsBefore10(db, minutesKept: version >= 6) }
                try db.execute(migrations[step], "migrating the schema to version \(step + 1)")
            }
            if version < 9 {
                var appended = 0
                try SQLiteJournal.begin(db, count: Int(try db.integer("SELECT count(*) FROM messages")), appended: &appended)
            }
            if var carried {
                carried.mark = try SQLiteJournal.newest(db)
                try SQLiteJournal.save(carried, db)
            } else {
                try SQLiteJournal.recount(db)
            }
            try db.execute("PRAGMA application_id = \(SQLiteHeader.msgApplicationID)", "marking the file as msg's")
            try db.execute("PRAGMA user_version = \(current)", "recording the schema version")
        }
    }

    /// The counts a store of schema 5 to 9 kept, when they were whole (a row `ok` of
    /// `tallies` says so): `tallies` with `tally_log`, and `created_minutes` when
    /// the store kept them (`minutesKept`: from schema 6; else counted from the
    /// records). Nil when they were not whole: the store counts afresh.
    private static func countsBefore10(_ db: SQLiteDatabase, minutesKept: Bool) throws(MsgError) -> CommitFold? {
        guard try db.integer("SELECT count(*) FROM sqlite_master WHERE name IN ('tallies', 'tally_log')") == 2,
              try db.integer("SELECT count(*) FROM tallies WHERE kind = 'ok'") > 0 else { return nil }
        var fold = CommitFold()
        let s = try db.statement("SELECT kind, a, b, n, NULL FROM tallies UNION ALL SELECT NULL, NULL, NULL, NULL, deltas FROM tally_log")
        while try s.step("carrying the counts over") {
            if s.isNull(0) {
                fold.tally.add(logText: s.bytes(4))
            } else if let kind = Tally.Kind(rawValue: String(decoding: s.bytes(0), as: UTF8.self)) {
                fold.tally.add(Int(s.int64(3)), to: Tally.Key(kind, String(decoding: s.bytes(1), as: UTF8.self), String(decoding: s.bytes(2), as: UTF8.self)))
            }
        }
        s.reset()
        guard minutesKept, try db.integer("SELECT count(*) FROM sqlite_master WHERE name = 'created_minutes'") > 0 else {
            fold.created = try SQLiteJournal.minutes(db, now: .now())
            return fold
        }
        let minutes = try db.statement("SELECT status, minute, n FROM created_minutes")
        while try minutes.step("carrying the counts over") {
            fold.created[CreatedMinute(status: String(decoding: minutes.bytes(0), as: UTF8.self), minute: minutes.int64(1))] = Int(minutes.int64(2))
        }
        minutes.reset()
        fold.prune(now: .now())
        return fold
    }

    /// Checks, without changing anything, that the database holds a store this msg reads.
    /// - Throws: as ``migrate(_:)``; `storeIO` for a file with no store in it yet.
    static func check(_ db: SQLiteDatabase) throws(MsgError) {
        let version = try db.integer("PRAGMA user_version")
        if version == current { return }
        try refuseForeign(db, version: version)
        if version == 0 { throw SQLiteDatabase.missing(db.path) }
        throw MsgError(.storeIO, "store \(db.path) has schema version \(version), older than this msg's (\(current)); a command that writes, such as msg recover, brings it up to date")
    }

    /// Refuses a schema from a newer msg, and a database with tables but no msg schema.
    private static func refuseForeign(_ db: SQLiteDatabase, version: Int64) throws(MsgError) {
        if version > current {
            throw MsgError(.config, "store \(db.path) has schema version \(version), newer than this msg understands (\(current)); upgrade msg")
        }
        // Version and tables read again in one statement, one snapshot: another msg
        // process may commit the schema between a read of the version and of the tables.
        if version == 0,
           try db.integer("SELECT (SELECT count(*) FROM sqlite_master) * (SELECT user_version = 0 FROM pragma_user_version)") > 0 {
            throw MsgError(.config, "\(db.path) is a SQLite database with tables of its own, not a msg store; msg left it as it is (check --store or MSG_STORE)")
        }
    }
}
