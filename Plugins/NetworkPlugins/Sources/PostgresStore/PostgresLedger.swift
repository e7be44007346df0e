import MsgKit
import MsgSupport
import PostgresNIO

/// The store's ledger (schema 8, its runs the journal's rows since 11; msg-ledger(1),
/// ``JournalStore``, docs/DESIGN.md 10), kept so that it never serialises writers: a
/// leaf gets its place in the log after its commit.
///
/// - Each statement that changes messages appends its leaves as its row of the
///   journal, `commits` (``PostgresJournal``), in that very statement
///   (``RowColumns``): an id from a sequence (no lock), the leaves as kept (kind,
///   number, id, hash), and `first` NULL: not yet numbered (a row of no leaves
///   never is). Each message row lists its leaves in `ledger` as `RUN.ORDINAL`,
///   the ordinal its change had in the statement's input; `ords` lists the ordinals
///   a run holds when that is not all of them (a compare-and-set that did not apply).
///   As in the SQLite store, `history_n` and `content_fp` let the UPDATE's WHERE take
///   the common change, one entry appended to the same content, without a read.
/// - The sequencer (``sequence(_:)``, run by every ``PostgresStore/ledgerRead(_:)``:
///   checkpoint, verify, export) numbers the runs committed and not yet numbered in
///   the order of their ids, after the last, under an advisory lock no writer takes.
///   Numbers once given never change, so a checkpoint stays a prefix. A message's
///   own order is its list's, which its row lock keeps in the order of its commits;
///   the check replays that order, not the log's.
/// - A removed message keeps its list in `ledger_removed`, with its removal appended.
enum PostgresLedger {
    /// Version 8 (its runs became the journal's rows in 11, ``PostgresJournal/tables(_:)``).
    /// No row is rewritten: a column added with a constant default is not.
    static func tables(_ s: String) -> [String] {
        [
            "ALTER TABLE \(s).messages ADD COLUMN ledger text, ADD COLUMN history_n integer NOT NULL DEFAULT -1, "
                + "ADD COLUMN content_fp integer NOT NULL DEFAULT 0",
            "CREATE TABLE \(s).ledger_runs (id bigserial PRIMARY KEY, first bigint, count integer NOT NULL, ords integer[], leaves bytea NOT NULL)",
            // Hashes do not compress: kept out of line as they are, never tried.
            "ALTER TABLE \(s).ledger_runs ALTER COLUMN leaves SET STORAGE EXTERNAL",
            "CREATE UNIQUE INDEX ledger_runs_first ON \(s).ledger_runs (first) WHERE first IS NOT NULL",
            "CREATE INDEX ledger_runs_pending ON \(s).ledger_runs (id) WHERE first IS NULL",
            "CREATE TABLE \(s).ledger_removed (seq bigserial PRIMARY KEY, id text NOT NULL, ledger text NOT NULL)",
        ]
    }

    /// Begins the ledger of a schema that holds messages stored before it (the
    /// migration to 8), in the caller's transaction.
    static func begin(_ db: BlockingConnection) throws(MsgError) {
        let s = db.address.schema
        let rows = try db.query(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(s).messages"), "counting the messages")
        var count = 0
        for row in rows {
            do { count = Int(try row.decode(Int64.self)) } catch { throw PostgresStore.corrupt("the count of messages", error) }
        }
        var bytes: [UInt8] = []
        try LedgerLeaf.began(count).write(to: &bytes)
        var b = PostgresBindings(capacity: 1)
        b.append(ByteBuffer(bytes: bytes))
        try db.query(PostgresQuery(unsafeSQL: "INSERT INTO \(s).commits (count, leaves) VALUES (1, $1)", binds: b), "beginning the ledger")
    }

    // MARK: What the writing statements add

    /// The CTE `rid`: the id of the statement's run, taken once.
    static func nextRun(_ s: String) -> String { "rid AS (SELECT nextval('\(s).commits_id_seq') AS run)" }

    /// The list entry of the leaf with 1-based input ordinal `n` in the statement's run.
    static func ref(_ n: String) -> String { "((SELECT run FROM rid) || '.' || (\(n) - 1))" }

    /// `list` with `entry` appended.
    static func appended(_ list: String, _ entry: String) -> String { "coalesce(\(list) || ' ', '') || \(entry)" }

    /// The insert of the statement's row of the journal (``PostgresJournal``), its
    /// leaves and effects the parameters from `$p` on as ``RowJournal/bind(_:)``
    /// binds them: as they are when every one of the `total` rows given is in `from`
    /// (the common case: no other row is read); otherwise those of `rows` (a query of
    /// the 1-based ordinals of the rows in `from`), in the order of the ordinals,
    /// which `ords` then lists. The one-time filters keep the other branch from running.
    static func commit(_ s: String, from: String, first p: Int, total: String, rows: String) -> String {
        """
        INSERT INTO \(s).commits (id, count, ords, leaves, xid, effects)
        SELECT (SELECT run FROM rid), \(total), NULL, $\(p)::bytea, \(PostgresJournal.xid), $\(p + 3)::bytea
        WHERE \(total) > 0 AND (SELECT count(*) FROM \(from)) = \(total)
        UNION ALL
        SELECT (SELECT run FROM rid), count(*), array_agg((x.n - 1)::int4 ORDER BY x.n),
               string_agg(substring($\(p)::bytea from l.at + 1 for l.length), ''::bytea ORDER BY x.n), \(PostgresJournal.xid),
               string_agg(substring($\(p + 3)::bytea from l.eat + 1 for l.elength), ''::bytea ORDER BY x.n)
        FROM (\(rows)) AS x(n)
        JOIN unnest($\(p + 1)::int4[], $\(p + 2)::int4[], $\(p + 4)::int4[], $\(p + 5)::int4[]) WITH ORDINALITY AS l(at, length, eat, elength, n)
        ON l.n = x.n
        WHERE (SELECT count(*) FROM \(from)) < \(total) HAVING count(*) > 0
        """
    }

    // MARK: The sequencer

    /// The advisory lock of the sequencer: taken by ``PostgresStore/ledgerRead(_:)``
    /// for the whole read, never by a writer.
    static func lock(_ s: String) -> PostgresQuery {
        PostgresQuery(unsafeSQL: "SELECT pg_advisory_lock(hashtext('msg ledger'), hashtext('\(s)'))")
    }

    static func unlock(_ s: String) -> PostgresQuery {
        PostgresQuery(unsafeSQL: "SELECT pg_advisory_unlock(hashtext('msg ledger'), hashtext('\(s)'))")
    }

    /// Numbers the runs committed and not numbered yet, in the order of their ids,
    /// after the last numbered one. The caller holds ``lock(_:)``.
    static func sequence(_ db: BlockingConnection) throws(MsgError) {
        let s = db.address.schema
        try db.query(PostgresQuery(unsafeSQL: """
            WITH base AS (SELECT coalesce((SELECT first + count FROM \(s).commits WHERE first IS NOT NULL ORDER BY first DESC LIMIT 1), 0) AS e),
            p AS (SELECT id, sum(count) OVER (ORDER BY id) - count AS before FROM \(s).commits WHERE first IS NULL AND count > 0)
            UPDATE \(s).commits AS r SET first = base.e + p.before FROM p, base WHERE r.id = p.id
            """), "numbering the ledger")
    }

    /// Where each numbered run starts, and which ordinals it holds when not all.
    struct Runs {
        var runs: [Int64: (first: Int, count: Int, ords: [Int32]?)] = [:]

        init(_ db: BlockingConnection) throws(MsgError) {
            let s = db.address.schema
            var after: Int64 = 0
            while true {
                var b = PostgresBindings(capacity: 1)
                b.append(after)
                let rows = try db.query(PostgresQuery(unsafeSQL: """
                    SELECT id, first, count, ords FROM \(s).commits WHERE id > $1 AND first IS NOT NULL ORDER BY id LIMIT 10000
                    """, binds: b), "reading the ledger")
                var n = 0
                for row in rows {
                    n += 1
                    do {
                        let (id, first, count, ords) = try row.decode((Int64, Int64, Int32, [Int32]?).self)
                        runs[id] = (Int(first), Int(count), ords)
                        after = id
                    } catch {
                        throw PostgresStore.corrupt("the ledger", error)
                    }
                }
                if n < 10000 { return }
            }
        }

        /// The numbers of a list's leaves (`RUN.ORDINAL`, space-separated); one that
        /// names no leaf of a numbered run is `Int.max` (past the end, as the check
        /// says). Nil for text that is not a list.
        func numbers(_ text: String) -> [Int]? {
            var text = text
            return text.withUTF8 { (bytes) -> [Int]? in
                var out: [Int] = []
                out.reserveCapacity(4)
                var run: Int64 = 0
                var ordinal = 0
                var digits = 0
                var inOrdinal = false
                for c in bytes {
                    switch c {
                    case UInt8(ascii: "0")...UInt8(ascii: "9"):
                        guard digits < 18 else { return nil }
                        digits += 1
                        if inOrdinal { ordinal = ordinal * 10 + Int(c - UInt8(ascii: "0")) } else { run = run * 10 + Int64(c - UInt8(ascii: "0")) }
                    case UInt8(ascii: "."):
                        guard !inOrdinal, digits > 0 else { return nil }
                        inOrdinal = true
                        digits = 0
                    case UInt8(ascii: " "):
                        guard inOrdinal, digits > 0 else { return nil }
                        out.append(number(run, ordinal))
                        (run, ordinal, digits, inOrdinal) = (0, 0, 0, false)
                    default:
                        return nil
                    }
                }
                guard inOrdinal, digits > 0 else { return nil }
                out.append(number(run, ordinal))
                return out
            }
        }

        /// The number of leaf `ordinal` of run `run`; `Int.max` for none.
        private func number(_ run: Int64, _ ordinal: Int) -> Int {
            guard let (first, count, ords) = runs[run] else { return Int.max }
            guard let ords else { return ordinal < count ? first + ordinal : Int.max }
            var lo = 0, hi = ords.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if Int(ords[mid]) < ordinal { lo = mid + 1 } else { hi = mid }
            }
            return lo < ords.count && Int(ords[lo]) == ordinal ? first + lo : Int.max
        }
    }
}
