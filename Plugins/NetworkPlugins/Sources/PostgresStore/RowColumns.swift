import MsgKit
import MsgSupport
import PostgresNIO

/// Records as column arrays, so a whole batch goes to the server as one statement
/// (`unnest($1::text[], …)`): one round trip and one commit per batch, however
/// many records it holds. Absent times travel as -1 (arrays of nullable values are
/// not among PostgresNIO's encodings) and become NULL in SQL.
struct RowColumns {
    var ids: [String] = []
    var statuses: [String] = []
    var recipients: [String] = []
    var createdAt: [Int64] = []
    var updatedAt: [Int64] = []
    var dueAt: [Int64] = []
    var leaseUntil: [Int64] = []
    /// The text after the content kept apart (``PostgresContent``), or all of it.
    var records: [String] = []
    /// The content kept apart; "" when the text is stored whole.
    var contents: [String] = []
    var historyAt: [Int32] = []
    /// For updates: the status each row must still have.
    var expected: [String] = []
    /// Per row, what storing it adds to the counts (``Tally/logText``): for an
    /// insert the record itself, for an update the attempt it ends (the statement
    /// moves the record between figures itself, from the stored recipient).
    var deltas: [String] = []
    /// The ledger (``PostgresLedger``): per row the leaf of its common case (an insert:
    /// its state; an update: its last history entry appended), all of them one after
    /// another in one value (the statement's run as it is when every row applies),
    /// each row's at `leafAt`, `leafLength` long.
    var leaves: [UInt8] = []
    var leafAt: [Int32] = []
    var leafLength: [Int32] = []
    /// Per row: how many history entries it has, the fingerprint of its content, and
    /// how many the stored row must have for that leaf to be its change (-2: none).
    var historyN: [Int32] = []
    var prints: [Int32] = []
    var had: [Int32] = []
    /// For an update whose leaves were made from the row read under lock: the list
    /// entries of its leaves, `@.ORDINAL` each, `@` standing for the run (none: "").
    var refs: [String] = []

    init(_ rows: [EncodedMessage], expected: [Status]? = nil, preps: [LedgerPrep]) throws(MsgError) {
        for (r, prep) in zip(rows, preps) {
            let m = r.message
            let n = m.history.count
            let leaf = try prep.leaf(r, stored: expected == nil)
            leafAt.append(Int32(clamping: leaves.count))
            leafLength.append(Int32(clamping: leaf.count))
            leaves.append(contentsOf: leaf)
            historyN.append(Int32(clamping: n))
            prints.append(Int32(truncatingIfNeeded: prep.print))
            had.append(n > 0 ? Int32(clamping: n - 1) : -2)
            ids.append(m.id)
            statuses.append(m.status.rawValue)
            recipients.append(m.to)
            createdAt.append(m.createdAt.milliseconds)
            updatedAt.append(m.updatedAt.milliseconds)
            dueAt.append(m.dueAt?.milliseconds ?? -1)
            leaseUntil.append(m.lease?.until.milliseconds ?? -1)
            let split = PostgresContent.split(r)
            records.append(String(decoding: r.json[split...], as: UTF8.self))
            contents.append(split > 0 ? String(decoding: r.json[..<split], as: UTF8.self) : "")
            historyAt.append(Int32(clamping: r.historyOffset))
        }
        if let expected {
            self.expected = expected.map(\.rawValue)
            for (r, old) in zip(rows, expected) {
                var t = Tally()
                t.ended(from: old, into: r.message)
                deltas.append(t.logText)
            }
        } else {
            for r in rows {
                var t = Tally()
                t.added(r.message)
                deltas.append(t.logText)
            }
        }
    }

    /// Inserts the rows whose id is new, counting them in schema `s` (also by
    /// creation minute, ``PostgresAges``) and noting where they changed the queue
    /// (``PostgresFloors``); returns the ids inserted, each
    /// with the seq of the log row appended (``PostgresTally``).
    func insert(into table: String, schema s: String) -> PostgresQuery {
        var b = PostgresBindings(capacity: 16)
        b.append(ids); b.append(statuses); b.append(recipients); b.append(createdAt); b.append(updatedAt)
        b.append(dueAt); b.append(leaseUntil); b.append(records); b.append(historyAt); b.append(deltas); b.append(contents)
        b.append(ByteBuffer(bytes: leaves)); b.append(historyN); b.append(prints); b.append(leafAt); b.append(leafLength)
        return PostgresQuery(unsafeSQL: """
            WITH \(PostgresLedger.nextRun(s)),
            ins AS (
            INSERT INTO \(table) (id, status, recipient, created_at, updated_at, due_at, lease_until, record, history_at, content,
                                  ledger, history_n, content_fp)
            SELECT u.id, u.status, u.recipient, u.created_at, u.updated_at, NULLIF(u.due_at, -1), NULLIF(u.lease_until, -1),
                   u.record, u.history_at, NULLIF(u.content, ''), \(PostgresLedger.ref("u.n")), u.history_n, u.fp
            FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::int8[], $6::int8[], $7::int8[], $8::text[], $9::int4[], $11::text[],
                        $13::int4[], $14::int4[])
                 WITH ORDINALITY AS u(id, status, recipient, created_at, updated_at, due_at, lease_until, record, history_at, content,
                                      history_n, fp, n)
            ORDER BY u.n
            ON CONFLICT (id) DO NOTHING
            RETURNING id, status, created_at, ledger),
            leaves AS (\(PostgresLedger.run(s, from: "ins", leaves: "$12::bytea", total: "cardinality($1::text[])", rows: """
                SELECT l.n, l.at, l.length FROM ins JOIN unnest($15::int4[], $16::int4[]) WITH ORDINALITY AS l(at, length, n)
                ON l.n = split_part(ins.ledger, '.', 2)::int8 + 1
                """))),
            floor AS (\(PostgresFloors.append(s, "created_at", from: "ins"))),
            ages AS (\(PostgresAges.append(s, from: "ins", status: "status", sign: 1))),
            firsts AS (
                SELECT DISTINCT ON (d.id) d.deltas FROM unnest($1::text[], $10::text[]) WITH ORDINALITY AS d(id, deltas, n)
                JOIN ins USING (id) ORDER BY d.id, d.n),
            log AS (\(PostgresTally.append(s, "firsts.deltas", from: "firsts")))
            SELECT id, (SELECT seq FROM log), (SELECT bytes FROM log) FROM ins
            """, binds: b)
    }

    /// Replaces each row whose status is still its expected one (compare-and-set),
    /// counting the changes in schema `s` (also by creation minute, ``PostgresAges``)
    /// and noting where they changed the queue (``PostgresFloors``); returns the ids replaced, each with the seq
    /// of the log row appended (``PostgresTally``). `created_at` never changes and is
    /// left alone. The ids must be distinct.
    ///
    /// The common form (`run` nil) replaces only rows whose stored recipient is the
    /// new one and whose ledger has one history entry fewer of the same content (what
    /// claims and outcomes change), so the statement counts each from the recipient it
    /// has and appends the one leaf made beforehand, without reading the row first.
    /// The other form is for rows read under lock first (an edit, a history that went
    /// back, a message stored before the ledger): their recipients are read again in
    /// the statement, so an edit is counted from the recipient it replaces, and their
    /// leaves (`refs`) are the run given, `run.count` leaves. That costs a join the planner
    /// makes as a nested loop (flush to the mock of 100,000: 8.9 s instead of 5.9 s),
    /// so it is kept for the rows the first form did not replace.
    func update(_ table: String, schema s: String, run: (count: Int, bytes: [UInt8])? = nil) -> PostgresQuery {
        var b = PostgresBindings(capacity: 17)
        b.append(ids); b.append(expected); b.append(statuses); b.append(recipients); b.append(updatedAt)
        b.append(dueAt); b.append(leaseUntil); b.append(records); b.append(historyAt); b.append(deltas); b.append(contents)
        b.append(historyN); b.append(prints)
        let moved = PostgresTally.recordDeltas(oldTo: "upd.old_to", old: "upd.old", newTo: "upd.new_to", new: "upd.new")
        guard let run else {
            b.append(ByteBuffer(bytes: leaves)); b.append(had); b.append(leafAt); b.append(leafLength)
            return PostgresQuery(unsafeSQL: """
                WITH \(PostgresLedger.nextRun(s)),
                upd AS (
                UPDATE \(table) AS m SET status = u.status, updated_at = u.updated_at,
                    due_at = NULLIF(u.due_at, -1), lease_until = NULLIF(u.lease_until, -1), record = u.record,
                    history_at = u.history_at, content = \(PostgresContent.updated),
                    ledger = \(PostgresLedger.appended("m.ledger", PostgresLedger.ref("u.n"))), history_n = u.history_n, content_fp = u.fp
                FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[], $6::int8[], $7::int8[], $8::text[], $9::int4[], $10::text[],
                            $11::text[], $12::int4[], $13::int4[], $15::int4[], $16::int4[], $17::int4[])
                     WITH ORDINALITY AS u(id, expected, status, recipient, updated_at, due_at, lease_until, record, history_at, deltas,
                                          content, history_n, fp, had, leaf_at, leaf_length, n)
                WHERE m.id = u.id AND m.status = u.expected AND m.recipient = u.recipient AND m.history_n = u.had AND m.content_fp = u.fp
                RETURNING m.id, m.recipient AS old_to, u.expected AS old, m.recipient AS new_to, m.status AS new, u.deltas, m.created_at,
                          u.leaf_at, u.leaf_length, u.n),
                leaves AS (\(PostgresLedger.run(s, from: "upd", leaves: "$14::bytea", total: "cardinality($1::text[])",
                                                rows: "SELECT n, leaf_at, leaf_length FROM upd"))),
                floor AS (\(PostgresFloors.append(s, "created_at", from: "upd"))),
                ages AS (\(PostgresAges.appendMoves(s, from: "upd", old: "upd.old", new: "upd.new"))),
                log AS (\(PostgresTally.append(s, "\(moved) || upd.deltas", from: "upd")))
                SELECT id, (SELECT seq FROM log), (SELECT bytes FROM log) FROM upd
                """, binds: b)
        }
        b.append(refs); b.append(Int32(clamping: run.count)); b.append(ByteBuffer(bytes: run.bytes))
        return PostgresQuery(unsafeSQL: """
            WITH rid AS (INSERT INTO \(s).ledger_runs (count, leaves) SELECT $15::int4, $16::bytea WHERE $15::int4 > 0 RETURNING id AS run),
            old AS (SELECT id, recipient FROM \(table) WHERE id = ANY($1::text[]) FOR UPDATE),
            upd AS (
            UPDATE \(table) AS m SET status = u.status, recipient = u.recipient, updated_at = u.updated_at,
                due_at = NULLIF(u.due_at, -1), lease_until = NULLIF(u.lease_until, -1), record = u.record,
                history_at = u.history_at, content = \(PostgresContent.updated),
                ledger = CASE WHEN u.refs = '' THEN m.ledger
                              ELSE \(PostgresLedger.appended("m.ledger", "replace(u.refs, '@', (SELECT run FROM rid)::text)")) END,
                history_n = u.history_n, content_fp = u.fp
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[], $6::int8[], $7::int8[], $8::text[], $9::int4[], $10::text[],
                        $11::text[], $12::int4[], $13::int4[], $14::text[])
                 AS u(id, expected, status, recipient, updated_at, due_at, lease_until, record, history_at, deltas, content, history_n, fp, refs),
                 old
            WHERE m.id = u.id AND m.status = u.expected AND old.id = m.id
            RETURNING m.id, old.recipient AS old_to, u.expected AS old, m.recipient AS new_to, m.status AS new, u.deltas, m.created_at),
            floor AS (\(PostgresFloors.append(s, "created_at", from: "upd"))),
            ages AS (\(PostgresAges.appendMoves(s, from: "upd", old: "upd.old", new: "upd.new"))),
            log AS (\(PostgresTally.append(s, "\(moved) || upd.deltas", from: "upd")))
            SELECT id, (SELECT seq FROM log), (SELECT bytes FROM log) FROM upd
            """, binds: b)
    }
}
