import MsgKit
import PostgresNIO

/// Where each commit changed the queue (schema 5, ``ChangeFloors``), as in the
/// SQLite store: every statement that writes records appends, in its own commit, a
/// row with its transaction id and the earliest `created_at` it wrote (none for a
/// destination state: anything may have changed). Without it every claim of a
/// PostgreSQL worker started from the first message: a million waiting behind
/// suspended destinations were walked at every claim.
///
/// Transactions commit out of the order of their ids, so a mark is not "the last
/// commit seen" but the `xmin` of the reader's snapshot: every transaction with a
/// lower id had ended and was visible to it, so the commits a reader has not seen
/// all have an id at or above its mark. Commits it saw with such an id are named
/// again (a floor further back than needed, never a change missed) until the
/// transactions open beside them end.
///
/// Rows older than ``kept`` transactions are deleted now and then by a writer
/// (`claim_floors_pruned.below` says how far): a reader whose mark is older is told
/// ``ChangeFloor/Floor/all``. `claim_hints` keeps where the last one-shot run's scan
/// stopped (``ChangeFloors/saveScanHint(_:_:)``).
enum PostgresFloors {
    static func tables(_ s: String) -> [String] {
        [
            "CREATE TABLE \(s).claim_floors (xid bigint NOT NULL, created_at bigint)",
            "CREATE INDEX claim_floors_xid ON \(s).claim_floors (xid)",
            "CREATE TABLE \(s).claim_floors_pruned (below bigint NOT NULL)",
            "INSERT INTO \(s).claim_floors_pruned (below) VALUES (0)",
            "CREATE TABLE \(s).claim_hints (kind text NOT NULL PRIMARY KEY, hint text NOT NULL)",
        ]
    }

    /// How many transactions (of the whole server) a row is kept for.
    static let kept = 65_536

    /// SQL: appends the floor of the rows of CTE `source` (their `created_at` in
    /// `column`), when it has any, to the transaction's commit.
    static func append(_ s: String, _ column: String, from source: String) -> String {
        """
        INSERT INTO \(s).claim_floors (xid, created_at)
            SELECT pg_current_xact_id()::text::bigint, min(\(column)) FROM \(source) HAVING count(*) > 0
        """
    }

    /// SQL: notes that the transaction writes a destination state.
    static func appendState(_ s: String) -> String {
        "INSERT INTO \(s).claim_floors (xid, created_at) VALUES (pg_current_xact_id()::text::bigint, NULL)"
    }

    /// The answer of ``ChangeFloors/changeFloor(since:)``, in one statement (one snapshot).
    static func read(since mark: Int64?, _ db: BlockingConnection) throws(MsgError) -> ChangeFloor {
        let s = db.address.schema
        var b = PostgresBindings()
        b.append(mark ?? Int64.max)
        let rows = try db.query(PostgresQuery(unsafeSQL: """
            SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint, (SELECT below FROM \(s).claim_floors_pruned LIMIT 1),
                   f.n, f.states, f.lowest
            FROM (SELECT count(*) AS n, bool_or(created_at IS NULL) AS states, min(created_at) AS lowest
                  FROM \(s).claim_floors WHERE xid >= $1) AS f
            """, binds: b), "reading where the queue changed")
        guard let row = rows.first else { throw MsgError(.storeIO, "reading where the queue changed: no answer") }
        let now: Int64, below: Int64?, n: Int64, states: Bool?, lowest: Int64?
        do {
            (now, below, n, states, lowest) = try row.decode((Int64, Int64?, Int64, Bool?, Int64?).self)
        } catch {
            throw PostgresStore.corrupt("where the queue changed", error)
        }
        guard let mark else { return ChangeFloor(mark: now, floor: .all) }
        // Older than what is kept, or ahead of this server (another one at the address).
        if mark > now || mark < (below ?? 0) { return ChangeFloor(mark: now, floor: .all) }
        if n == 0 { return ChangeFloor(mark: now, floor: .none) }
        guard states != true, let lowest else { return ChangeFloor(mark: now, floor: .all) }
        return ChangeFloor(mark: now, floor: .from(ClaimPosition(createdAt: Timestamp(milliseconds: lowest), id: "")))
    }

    /// Deletes the rows older than ``kept`` transactions, in a statement of its own
    /// after the write committed, after one write in 256 (of any process: short-lived
    /// ones too), so the table stays small whoever writes. Its failure is not the
    /// write's, which is stored: a later write prunes instead.
    static func pruneNowAndThen(_ db: BlockingConnection) {
        guard UInt8.random(in: 0...255) == 0 else { return }
        try? prune(db, keeping: kept)
    }

    /// Deletes the rows of transactions more than `keeping` below the oldest one
    /// running, and notes below which id rows may be gone.
    static func prune(_ db: BlockingConnection, keeping: Int) throws(MsgError) {
        let s = db.address.schema
        try db.query(PostgresQuery(unsafeSQL: """
            WITH gone AS (
                DELETE FROM \(s).claim_floors WHERE xid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint - \(keeping)
                RETURNING xid)
            UPDATE \(s).claim_floors_pruned SET below = greatest(below, (SELECT max(xid) + 1 FROM gone))
            WHERE EXISTS (SELECT 1 FROM gone)
            """), "forgetting where the queue changed long ago")
    }
}

extension PostgresStore: ChangeFloors {
    public func changeFloor(since mark: Int64?) throws(MsgError) -> ChangeFloor {
        try PostgresFloors.read(since: mark, db)
    }

    public func scanHint(_ kind: String) throws(MsgError) -> String? {
        var b = PostgresBindings()
        b.append(kind)
        let rows = try db.query(PostgresQuery(unsafeSQL: "SELECT hint FROM \(db.address.schema).claim_hints WHERE kind = $1", binds: b),
                                "reading where the last claim stopped")
        guard let row = rows.first else { return nil }
        do { return try row.decode(String.self) } catch { throw Self.corrupt("where the last claim stopped", error) }
    }

    /// A statement of its own, not a change of the queue: no floor, no count.
    public func saveScanHint(_ kind: String, _ hint: String) throws(MsgError) {
        try writable()
        var b = PostgresBindings()
        b.append(kind)
        b.append(hint)
        try db.query(PostgresQuery(unsafeSQL: """
            INSERT INTO \(db.address.schema).claim_hints (kind, hint) VALUES ($1, $2) ON CONFLICT (kind) DO UPDATE SET hint = excluded.hint
            """, binds: b), "noting where the claim stopped")
    }
}
