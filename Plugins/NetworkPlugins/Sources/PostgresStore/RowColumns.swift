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
    /// For updates: the recipient and ledger each row must still have for the
    /// change to be the one the recorder made its effects for (-2 entries: none).
    var oldTo: [String] = []
    var had: [Int32] = []
    /// What each row's change means beside it, and its leaves (``RowEffects``).
    var effects = RowEffects()
    /// Per row, what its ledger holds after the change: its history entries and its
    /// content's fingerprint (its low 32 bits: the column is an integer).
    var historyN: [Int32] = []
    var prints: [Int32] = []
    /// The rows, each with its effects: inserted (`expected` nil), or changed from
    /// `expected` with the row found as `facts` says (read under lock), or, without
    /// facts, as the common change finds it (one entry appended, same recipient).
    init(_ rows: [EncodedMessage], expected: [Status]? = nil, preps: [LedgerPrep], facts: [StoredFacts]? = nil) throws(MsgError) {
        for (i, (r, prep)) in zip(rows, preps).enumerated() {
            let m = r.message
            var recorder = ChangeRecorder()
            let row: RowLedger
            if let expected {
                let f = facts?[i] ?? recorder.commonChange(r, m, expected: expected[i], prep: prep).facts
                row = try recorder.updated(r, m, from: f, prep: prep)
                self.expected.append(expected[i].rawValue)
                oldTo.append(f.recipient)
                had.append(Int32(clamping: f.ledgerEntries))
            } else {
                row = try recorder.inserted(r, m, prep: prep)
            }
            effects.add(recorder.take(), createdAt: m.createdAt)
            historyN.append(Int32(clamping: row.entries))
            prints.append(Int32(truncatingIfNeeded: row.contentPrint))
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
    }

    /// Inserts the rows whose id is new, with what each means beside its row
    /// (``RowEffects/sql(_:applied:deltas:floors:created:)``: counts, counts by creation
    /// minute, the floor) and its leaf; returns the ids inserted, each with the seq
    /// of the log row appended (``PostgresTally``).
    func insert(into table: String, schema s: String) -> PostgresQuery {
        var b = PostgresBindings(capacity: 20)
        b.append(ids); b.append(statuses); b.append(recipients); b.append(createdAt); b.append(updatedAt)
        b.append(dueAt); b.append(leaseUntil); b.append(records); b.append(historyAt); b.append(contents)
        b.append(ByteBuffer(bytes: effects.leaves)); b.append(historyN); b.append(prints); b.append(effects.leafAt); b.append(effects.leafLength)
        effects.bind(&b)
        return PostgresQuery(unsafeSQL: """
            WITH \(PostgresLedger.nextRun(s)),
            ins AS (
            INSERT INTO \(table) (id, status, recipient, created_at, updated_at, due_at, lease_until, record, history_at, content,
                                  ledger, history_n, content_fp)
            SELECT u.id, u.status, u.recipient, u.created_at, u.updated_at, NULLIF(u.due_at, -1), NULLIF(u.lease_until, -1),
                   u.record, u.history_at, NULLIF(u.content, ''), \(PostgresLedger.ref("u.n")), u.history_n, u.fp
            FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::int8[], $6::int8[], $7::int8[], $8::text[], $9::int4[], $10::text[],
                        $12::int4[], $13::int4[])
                 WITH ORDINALITY AS u(id, status, recipient, created_at, updated_at, due_at, lease_until, record, history_at, content,
                                      history_n, fp, n)
            ORDER BY u.n
            ON CONFLICT (id) DO NOTHING
            RETURNING id, ledger),
            leaves AS (\(PostgresLedger.run(s, from: "ins", leaves: "$11::bytea", total: "cardinality($1::text[])", rows: """
                SELECT l.n, l.at, l.length FROM ins JOIN unnest($14::int4[], $15::int4[]) WITH ORDINALITY AS l(at, length, n)
                ON l.n = split_part(ins.ledger, '.', 2)::int8 + 1
                """))),
            \(RowEffects.sql(s, applied: "SELECT split_part(ledger, '.', 2)::int8 + 1 AS n FROM ins", deltas: 16, floors: 17, created: 18))
            SELECT id, (SELECT seq FROM log), (SELECT bytes FROM log) FROM ins
            """, binds: b)
    }

    /// Replaces each row whose status is still its expected one (compare-and-set),
    /// with what each means beside its row (``RowEffects/sql(_:applied:deltas:floors:created:)``)
    /// and its leaves; returns the ids replaced, each with the seq of the log row
    /// appended (``PostgresTally``). `created_at` never changes and is left alone. The
    /// ids must be distinct.
    ///
    /// The common form (`run` nil) replaces only rows found as the recorder's common
    /// change says (``ChangeRecorder/commonChange(_:_:expected:prep:)``: the stored
    /// recipient the new one, the ledger one history entry fewer of the same
    /// content), whose effects and one leaf were made beforehand, without reading the
    /// row first. The other form is for rows read under lock first (an edit, a history
    /// that went back, a message stored before the ledger), their effects made from
    /// what was read: their leaves (`refs`) are the run given, `run.count` leaves.
    func update(_ table: String, schema s: String, run: (count: Int, bytes: [UInt8])? = nil) -> PostgresQuery {
        var b = PostgresBindings(capacity: 24)
        b.append(ids); b.append(expected); b.append(statuses); b.append(recipients); b.append(updatedAt)
        b.append(dueAt); b.append(leaseUntil); b.append(records); b.append(historyAt); b.append(oldTo); b.append(contents)
        b.append(historyN); b.append(prints)
        effects.bind(&b)
        guard let run else {
            b.append(ByteBuffer(bytes: effects.leaves)); b.append(had); b.append(effects.leafAt); b.append(effects.leafLength)
            return PostgresQuery(unsafeSQL: """
                WITH \(PostgresLedger.nextRun(s)),
                upd AS (
                UPDATE \(table) AS m SET status = u.status, updated_at = u.updated_at,
                    due_at = NULLIF(u.due_at, -1), lease_until = NULLIF(u.lease_until, -1), record = u.record,
                    history_at = u.history_at, content = \(PostgresContent.updated),
                    ledger = \(PostgresLedger.appended("m.ledger", PostgresLedger.ref("u.n"))), history_n = u.history_n, content_fp = u.fp
                FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[], $6::int8[], $7::int8[], $8::text[], $9::int4[], $10::text[],
                            $11::text[], $12::int4[], $13::int4[], $21::int4[], $22::int4[], $23::int4[])
                     WITH ORDINALITY AS u(id, expected, status, recipient, updated_at, due_at, lease_until, record, history_at, old_to,
                                          content, history_n, fp, had, leaf_at, leaf_length, n)
                WHERE m.id = u.id AND m.status = u.expected AND m.recipient = u.old_to AND m.history_n = u.had AND m.content_fp = u.fp
                RETURNING m.id, u.leaf_at, u.leaf_length, u.n),
                leaves AS (\(PostgresLedger.run(s, from: "upd", leaves: "$20::bytea", total: "cardinality($1::text[])",
                                                rows: "SELECT n, leaf_at, leaf_length FROM upd"))),
                \(RowEffects.sql(s, applied: "SELECT n FROM upd", deltas: 14, floors: 15, created: 16))
                SELECT id, (SELECT seq FROM log), (SELECT bytes FROM log) FROM upd
                """, binds: b)
        }
        b.append(effects.refs); b.append(Int32(clamping: run.count)); b.append(ByteBuffer(bytes: run.bytes))
        return PostgresQuery(unsafeSQL: """
            WITH rid AS (INSERT INTO \(s).ledger_runs (count, leaves) SELECT $21::int4, $22::bytea WHERE $21::int4 > 0 RETURNING id AS run),
            upd AS (
            UPDATE \(table) AS m SET status = u.status, recipient = u.recipient, updated_at = u.updated_at,
                due_at = NULLIF(u.due_at, -1), lease_until = NULLIF(u.lease_until, -1), record = u.record,
                history_at = u.history_at, content = \(PostgresContent.updated),
                ledger = CASE WHEN u.refs = '' THEN m.ledger
                              ELSE \(PostgresLedger.appended("m.ledger", "replace(u.refs, '@', (SELECT run FROM rid)::text)")) END,
                history_n = u.history_n, content_fp = u.fp
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[], $6::int8[], $7::int8[], $8::text[], $9::int4[], $10::text[],
                        $11::text[], $12::int4[], $13::int4[], $20::text[])
                 WITH ORDINALITY AS u(id, expected, status, recipient, updated_at, due_at, lease_until, record, history_at, old_to, content,
                                      history_n, fp, refs, n)
            WHERE m.id = u.id AND m.status = u.expected AND m.recipient = u.old_to
            RETURNING m.id, u.n),
            \(RowEffects.sql(s, applied: "SELECT n FROM upd", deltas: 14, floors: 15, created: 16))
            SELECT id, (SELECT seq FROM log), (SELECT bytes FROM log) FROM upd
            """, binds: b)
    }
}

/// What each row of a statement means beside the row, as ``ChangeRecorder`` decided
/// it for that row alone, as column arrays: the statement adds up those of the rows
/// it changed (a compare-and-set that did not apply adds nothing). Per row, the
/// ``Tally``'s deltas (``Tally/logText``), the floor (its lowest creation time
/// written, ms) and its leaves; the counts by creation minute as rows of their own
/// (`createdRow` the row's 1-based ordinal).
struct RowEffects {
    var deltas: [String] = []
    var floors: [Int64] = []
    var createdRow: [Int32] = []
    var createdStatus: [String] = []
    var createdMinute: [Int64] = []
    var createdN: [Int64] = []
    /// The leaves, all one after another in one value (the statement's run as it is
    /// when every row applies), each row's at `leafAt`, `leafLength` long, and their
    /// list entries `@.ORDINAL` (`@` standing for the run).
    var leaves: [UInt8] = []
    var leafAt: [Int32] = []
    var leafLength: [Int32] = []
    var refs: [String] = []
    /// The leaves given so far.
    var run = 0

    /// Adds the next row's effects (a row whose change writes no record is floored
    /// at its own creation time).
    mutating func add(_ e: CommitEffects, createdAt: Timestamp) {
        let row = deltas.count + 1
        deltas.append(e.tally.logText)
        if case .lowest(let t) = e.floor { floors.append(t.milliseconds) } else { floors.append(createdAt.milliseconds) }
        for (key, n) in e.created where n != 0 {
            createdRow.append(Int32(clamping: row))
            createdStatus.append(key.status)
            createdMinute.append(key.minute)
            createdN.append(Int64(n))
        }
        leafAt.append(Int32(clamping: leaves.count))
        leafLength.append(Int32(clamping: e.leaves.count))
        leaves.append(contentsOf: e.leaves)
        refs.append((0..<e.leafCount).map { "@.\(run + $0)" }.joined(separator: " "))
        run += e.leafCount
    }

    /// SQL: the CTE `eff`, each changed row's effects (its tally deltas and floor) by
    /// its 1-based ordinal `n`, for the rows of `applied` (a query of the ordinals
    /// the statement changed), and the CTEs that add them up: the tally's log row,
    /// the counts by creation minute, the floor. `$D`, `$F` the deltas and floors;
    /// `$CR`, `$CS`, `$CM`, `$CN` the counts by minute.
    static func sql(_ s: String, applied: String, deltas: Int, floors: Int, created: Int) -> String {
        """
        applied AS (\(applied)),
        eff AS (SELECT e.deltas, e.floor FROM unnest($\(deltas)::text[], $\(floors)::int8[]) WITH ORDINALITY AS e(deltas, floor, n)
                JOIN applied ON applied.n = e.n),
        floor AS (\(PostgresFloors.append(s, "floor", from: "eff"))),
        ages AS (INSERT INTO \(s).created_log (status, minute, n)
                 SELECT c.status, c.minute, sum(c.d) FROM unnest($\(created)::int4[], $\(created + 1)::text[], $\(created + 2)::int8[], $\(created + 3)::int8[])
                 AS c(n, status, minute, d) JOIN applied ON applied.n = c.n GROUP BY 1, 2 HAVING sum(c.d) <> 0),
        log AS (\(PostgresTally.append(s, "eff.deltas", from: "eff")))
        """
    }

    /// Binds the effects' arrays, in the order ``sql(_:applied:deltas:floors:created:)`` takes them.
    func bind(_ b: inout PostgresBindings) {
        b.append(deltas); b.append(floors)
        b.append(createdRow); b.append(createdStatus); b.append(createdMinute); b.append(createdN)
    }
}
