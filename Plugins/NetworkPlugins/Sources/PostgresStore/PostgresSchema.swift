import MsgKit
import PostgresNIO

/// The queue's tables in their PostgreSQL schema (`?schema=`, default `msg`), with a
/// version and migrations, created on first use.
///
/// As in the SQLite store, each record is kept as its canonical JSON text (`record`)
/// with the offset where its `history` begins (`history_at`); the other columns
/// exist for the indexes and filters. `messages_status` serves the claim query
/// (status, then FIFO order); `messages_fifo` serves listings without a status;
/// `messages_sending` the records in flight to the destinations a claim holds;
/// `content` the content of a large record, apart from what its changes rewrite
/// (``PostgresContent``); `commits` the journal, one row a statement that changed
/// the queue, and `kept` its counts (``PostgresJournal``); the journal's leaves and
/// `ledger_removed` the ledger (``PostgresLedger``); `inbox` and the functions that
/// fill it (``PostgresInboxSchema``).
enum PostgresSchema {
    /// The version this msg writes.
    static let current = 11

    /// Each migration takes the schema from version `index` to `index + 1`.
    static func migrations(_ s: String) -> [[String]] {
        [[
            """
            CREATE TABLE \(s).messages (
                id text NOT NULL PRIMARY KEY,
                status text NOT NULL,
                recipient text NOT NULL,
                created_at bigint NOT NULL,
                updated_at bigint NOT NULL,
                due_at bigint,
                lease_until bigint,
                record text NOT NULL,
                history_at integer NOT NULL
            )
            """,
            "CREATE INDEX messages_fifo ON \(s).messages (created_at, id)",
            "CREATE INDEX messages_status ON \(s).messages (status, created_at, id)",
            "CREATE INDEX messages_due ON \(s).messages (due_at) WHERE due_at IS NOT NULL",
        ], [
            // Version 2: per-destination state (breaker, throttle, pause), one row per
            // key that has any; the text is msg's own (docs/DESIGN.md 6).
            "CREATE TABLE \(s).destinations (key text NOT NULL PRIMARY KEY, state text NOT NULL)",
        ],
        // Version 3: the counts, in tables version 11 replaced (``PostgresJournal/replaced``):
        // a schema made since has none.
        [],
        // Version 4: the records in flight by recipient, read by a claim for each
        // destination it holds (``PostgresClaimSession``): 1 ms for 1,024 destinations
        // instead of 7 to 28 for a walk of every record in flight.
        ["CREATE INDEX messages_sending ON \(s).messages (recipient) WHERE status = 'sending'"],
        // Version 5: where each commit changed the queue, and version 6: the records
        // by status and creation minute, as version 3.
        [], [],
        // Version 7: large contents in a column of their own (``PostgresContent``);
        // no row is rewritten.
        PostgresContent.tables(s),
        // Version 8: the ledger (``PostgresLedger``), begun by ``migrate(_:)`` with the
        // messages stored before it; no row is rewritten.
        PostgresLedger.tables(s),
        // Version 9: the inbox an application fills in its own transactions with
        // enqueue() (``PostgresInboxSchema``), empty at first.
        PostgresInboxSchema.tables(s),
        // Version 10: enqueue() refuses a draft over msg's record limit and a header
        // named as a field, inside the application's transaction.
        [PostgresInboxSchema.draftProblem(s, replacing: true)],
        // Version 11: the commit journal (``PostgresJournal``), begun by ``migrate(_:)``.
        PostgresJournal.tables(s)]
    }

    /// Brings the schema to ``current``. Cheap when it is there already (one query);
    /// otherwise one transaction under an advisory lock, so processes starting
    /// together on a new database create it once.
    /// - Throws: `config` when the schema was written by a newer msg; `storeIO`.
    static func migrate(_ db: BlockingConnection) throws(MsgError) {
        let s = db.address.schema
        if try version(db, s) == current { return }
        try db.transaction("creating the schema \(s)") { () throws(MsgError) in
            try db.query("SELECT pg_advisory_xact_lock(hashtext('msg schema'), hashtext(\(s)))", "waiting for the schema lock")
            try db.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \(s)"), "creating the schema \(s)")
            try db.query(PostgresQuery(unsafeSQL: "CREATE TABLE IF NOT EXISTS \(s).msg_schema (version integer NOT NULL)"),
                         "creating the schema \(s)")
            let found = try version(db, s) ?? 0
            if found > current {
                throw MsgError(.config, "schema \(s) in \(db.address.display) has version \(found), newer than this msg understands (\(current)); upgrade msg")
            }
            for step in found..<current {
                for statement in migrations(s)[step] {
                    try db.query(PostgresQuery(unsafeSQL: statement), "migrating schema \(s) to version \(step + 1)")
                }
            }
            if found < 8 { try PostgresLedger.begin(db) }
            if found < 11 { try PostgresJournal.begin(db, from: found) }
            try db.query(PostgresQuery(unsafeSQL: "DELETE FROM \(s).msg_schema"), "recording the schema version")
            try db.query(PostgresQuery(unsafeSQL: "INSERT INTO \(s).msg_schema (version) VALUES (\(current))"), "recording the schema version")
        }
    }

    /// Checks, without creating anything, that the schema is one this msg reads.
    /// - Throws: `storeIO` when there is no schema yet; `config` when it is newer.
    static func check(_ db: BlockingConnection) throws(MsgError) {
        let s = db.address.schema
        switch try version(db, s) {
        case current?: return
        case nil:
            throw MsgError(.storeIO, "there is no msg queue in schema \(s) of \(db.address.display) yet: nothing has been queued there (msg queue add creates it)")
        case let found?:
            if found > current {
                throw MsgError(.config, "schema \(s) in \(db.address.display) has version \(found), newer than this msg understands (\(current)); upgrade msg")
            }
            throw MsgError(.storeIO, "schema \(s) in \(db.address.display) has version \(found), older than this msg's (\(current)); a command that writes, such as msg recover, brings it up to date")
        }
    }

    /// The recorded version; nil when there is no schema yet.
    private static func version(_ db: BlockingConnection, _ s: String) throws(MsgError) -> Int? {
        // to_regclass answers NULL instead of failing when the table is missing, so a
        // transaction around this stays usable.
        let exists = try db.query("SELECT to_regclass(\(s + ".msg_schema")) IS NOT NULL", "reading the schema version")
        guard let row = exists.first, (try? row.decode(Bool.self)) == true else { return nil }
        let rows = try db.query(PostgresQuery(unsafeSQL: "SELECT max(version) FROM \(s).msg_schema"), "reading the schema version")
        guard let first = rows.first, let v = try? first.decode(Int32?.self) else { return nil }
        return Int(v)
    }
}
