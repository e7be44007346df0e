import MsgKit
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

    init(_ rows: [EncodedMessage], expected: [Status]? = nil) {
        for r in rows {
            let m = r.message
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
        var b = PostgresBindings(capacity: 11)
        b.append(ids); b.append(statuses); b.append(recipients); b.append(createdAt); b.append(updatedAt)
        b.append(dueAt); b.append(leaseUntil); b.append(records); b.append(historyAt); b.append(deltas); b.append(contents)
        return PostgresQuery(unsafeSQL: """
            WITH ins AS (
            INSERT INTO \(table) (id, status, recipient, created_at, updated_at, due_at, lease_until, record, history_at, content)
            SELECT u.id, u.status, u.recipient, u.created_at, u.updated_at, NULLIF(u.due_at, -1), NULLIF(u.lease_until, -1),
                   u.record, u.history_at, NULLIF(u.content, '')
            FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::int8[], $6::int8[], $7::int8[], $8::text[], $9::int4[], $11::text[])
                 WITH ORDINALITY AS u(id, status, recipient, created_at, updated_at, due_at, lease_until, record, history_at, content, n)
            ORDER BY u.n
            ON CONFLICT (id) DO NOTHING
            RETURNING id, status, created_at),
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
    /// With `sameRecipient`, only rows whose stored recipient is the new one are
    /// replaced (what claims and outcomes change: the common case), so the statement
    /// counts each from the recipient it has. Otherwise the stored recipients are read
    /// first under the rows' locks (`old`), so an edit is counted from the recipient it
    /// replaces, also one another process made meanwhile; that costs a join the planner
    /// makes as a nested loop (flush to the mock of 100,000: 8.9 s instead of 5.9 s),
    /// so it is kept for the rows the first form did not replace.
    func update(_ table: String, schema s: String, sameRecipient: Bool) -> PostgresQuery {
        var b = PostgresBindings(capacity: 11)
        b.append(ids); b.append(expected); b.append(statuses); b.append(recipients); b.append(updatedAt)
        b.append(dueAt); b.append(leaseUntil); b.append(records); b.append(historyAt); b.append(deltas); b.append(contents)
        let moved = PostgresTally.recordDeltas(oldTo: "upd.old_to", old: "upd.old", newTo: "upd.new_to", new: "upd.new")
        if sameRecipient {
            return PostgresQuery(unsafeSQL: """
                WITH upd AS (
                UPDATE \(table) AS m SET status = u.status, updated_at = u.updated_at,
                    due_at = NULLIF(u.due_at, -1), lease_until = NULLIF(u.lease_until, -1), record = u.record,
                    history_at = u.history_at, content = \(PostgresContent.updated)
                FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[], $6::int8[], $7::int8[], $8::text[], $9::int4[], $10::text[], $11::text[])
                     AS u(id, expected, status, recipient, updated_at, due_at, lease_until, record, history_at, deltas, content)
                WHERE m.id = u.id AND m.status = u.expected AND m.recipient = u.recipient
                RETURNING m.id, m.recipient AS old_to, u.expected AS old, m.recipient AS new_to, m.status AS new, u.deltas, m.created_at),
                floor AS (\(PostgresFloors.append(s, "created_at", from: "upd"))),
                ages AS (\(PostgresAges.appendMoves(s, from: "upd", old: "upd.old", new: "upd.new"))),
                log AS (\(PostgresTally.append(s, "\(moved) || upd.deltas", from: "upd")))
                SELECT id, (SELECT seq FROM log), (SELECT bytes FROM log) FROM upd
                """, binds: b)
        }
        return PostgresQuery(unsafeSQL: """
            WITH old AS (SELECT id, recipient FROM \(table) WHERE id = ANY($1::text[]) FOR UPDATE),
            upd AS (
            UPDATE \(table) AS m SET status = u.status, recipient = u.recipient, updated_at = u.updated_at,
                due_at = NULLIF(u.due_at, -1), lease_until = NULLIF(u.lease_until, -1), record = u.record,
                history_at = u.history_at, content = \(PostgresContent.updated)
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[], $6::int8[], $7::int8[], $8::text[], $9::int4[], $10::text[], $11::text[])
                 AS u(id, expected, status, recipient, updated_at, due_at, lease_until, record, history_at, deltas, content), old
            WHERE m.id = u.id AND m.status = u.expected AND old.id = m.id
            RETURNING m.id, old.recipient AS old_to, u.expected AS old, m.recipient AS new_to, m.status AS new, u.deltas, m.created_at),
            floor AS (\(PostgresFloors.append(s, "created_at", from: "upd"))),
            ages AS (\(PostgresAges.appendMoves(s, from: "upd", old: "upd.old", new: "upd.new"))),
            log AS (\(PostgresTally.append(s, "\(moved) || upd.deltas", from: "upd")))
            SELECT id, (SELECT seq FROM log), (SELECT bytes FROM log) FROM upd
            """, binds: b)
    }
}
