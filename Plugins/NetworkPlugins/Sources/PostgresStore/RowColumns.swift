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
    /// What each row's change means beside it, and its leaves (``RowJournal``).
    var journal = RowJournal()
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
            journal.add(recorder.take(), createdAt: m.createdAt)
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

    /// Inserts the rows whose id is new, with their row of the journal (what each
    /// means beside its row, and its leaf: ``PostgresLedger/commit(_:from:first:total:rows:)``);
    /// returns the ids inserted, each with the id of that row.
    func insert(into table: String, schema s: String) -> PostgresQuery {
        var b = PostgresBindings(capacity: 18)
        b.append(ids); b.append(statuses); b.append(recipients); b.append(createdAt); b.append(updatedAt)
        b.append(dueAt); b.append(leaseUntil); b.append(records); b.append(historyAt); b.append(contents)
        b.append(historyN); b.append(prints)
        journal.bind(&b)
        return PostgresQuery(unsafeSQL: """
            WITH \(PostgresLedger.nextRun(s)),
            ins AS (
            INSERT INTO \(table) (id, status, recipient, created_at, updated_at, due_at, lease_until, record, history_at, content,
                                  ledger, history_n, content_fp)
            SELECT u.id, u.status, u.recipient, u.created_at, u.updated_at, NULLIF(u.due_at, -1), NULLIF(u.lease_until, -1),
                   u.record, u.history_at, NULLIF(u.content, ''), \(PostgresLedger.ref("u.n")), u.history_n, u.fp
            FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::int8[], $6::int8[], $7::int8[], $8::text[], $9::int4[], $10::text[],
                        $11::int4[], $12::int4[])
                 WITH ORDINALITY AS u(id, status, recipient, created_at, updated_at, due_at, lease_until, record, history_at, content,
                                      history_n, fp, n)
            ORDER BY u.n
            ON CONFLICT (id) DO NOTHING
            RETURNING id, ledger),
            c AS (\(PostgresLedger.commit(s, from: "ins", first: 13, total: "cardinality($1::text[])",
                                          rows: "SELECT split_part(ledger, '.', 2)::int8 + 1 FROM ins")))
            SELECT id, (SELECT run FROM rid) FROM ins
            """, binds: b)
    }

    /// Replaces each row whose status is still its expected one (compare-and-set),
    /// with its row of the journal; returns the ids replaced, each with the id of
    /// that row. `created_at` never changes and is left alone. The ids must be distinct.
    ///
    /// The common form (`locked` false) replaces only rows found as the recorder's
    /// common change says (``ChangeRecorder/commonChange(_:_:expected:prep:)``: the
    /// stored recipient the new one, the ledger one history entry fewer of the same
    /// content), whose effects and one leaf were made beforehand, without reading the
    /// row first. The other form is for rows read under lock first (an edit, a history
    /// that went back, a message stored before the ledger), their effects made from
    /// what was read: every one applies, and the journal's row is written first, with
    /// all their leaves, so their lists can name it.
    func update(_ table: String, schema s: String, locked: Bool = false) -> PostgresQuery {
        var b = PostgresBindings(capacity: 20)
        b.append(ids); b.append(expected); b.append(statuses); b.append(recipients); b.append(updatedAt)
        b.append(dueAt); b.append(leaseUntil); b.append(records); b.append(historyAt); b.append(oldTo); b.append(contents)
        b.append(historyN); b.append(prints)
        guard locked else {
            b.append(had)
            journal.bind(&b)
            return PostgresQuery(unsafeSQL: """
                WITH \(PostgresLedger.nextRun(s)),
                upd AS (
                UPDATE \(table) AS m SET status = u.status, updated_at = u.updated_at,
                    due_at = NULLIF(u.due_at, -1), lease_until = NULLIF(u.lease_until, -1), record = u.record,
                    history_at = u.history_at, content = \(PostgresContent.updated),
                    ledger = \(PostgresLedger.appended("m.ledger", PostgresLedger.ref("u.n"))), history_n = u.history_n, content_fp = u.fp
                FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[], $6::int8[], $7::int8[], $8::text[], $9::int4[], $10::text[],
                            $11::text[], $12::int4[], $13::int4[], $14::int4[])
                     WITH ORDINALITY AS u(id, expected, status, recipient, updated_at, due_at, lease_until, record, history_at, old_to,
                                          content, history_n, fp, had, n)
                WHERE m.id = u.id AND m.status = u.expected AND m.recipient = u.old_to AND m.history_n = u.had AND m.content_fp = u.fp
                RETURNING m.id, u.n),
                c AS (\(PostgresLedger.commit(s, from: "upd", first: 15, total: "cardinality($1::text[])", rows: "SELECT n FROM upd")))
                SELECT id, (SELECT run FROM rid) FROM upd
                """, binds: b)
        }
        b.append(journal.refs); b.append(Int32(clamping: journal.run)); b.append(ByteBuffer(bytes: journal.leaves))
        b.append(ByteBuffer(bytes: journal.effects))
        return PostgresQuery(unsafeSQL: """
            WITH rid AS (INSERT INTO \(s).commits (count, leaves, xid, effects)
                         VALUES ($15::int4, $16::bytea, \(PostgresJournal.xid), $17::bytea) RETURNING id AS run),
            upd AS (
            UPDATE \(table) AS m SET status = u.status, recipient = u.recipient, updated_at = u.updated_at,
                due_at = NULLIF(u.due_at, -1), lease_until = NULLIF(u.lease_until, -1), record = u.record,
                history_at = u.history_at, content = \(PostgresContent.updated),
                ledger = CASE WHEN u.refs = '' THEN m.ledger
                              ELSE \(PostgresLedger.appended("m.ledger", "replace(u.refs, '@', (SELECT run FROM rid)::text)")) END,
                history_n = u.history_n, content_fp = u.fp
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[], $6::int8[], $7::int8[], $8::text[], $9::int4[], $10::text[],
                        $11::text[], $12::int4[], $13::int4[], $14::text[])
                 WITH ORDINALITY AS u(id, expected, status, recipient, updated_at, due_at, lease_until, record, history_at, old_to, content,
                                      history_n, fp, refs, n)
            WHERE m.id = u.id AND m.status = u.expected AND m.recipient = u.old_to
            RETURNING m.id)
            SELECT id, (SELECT run FROM rid) FROM upd
            """, binds: b)
    }
}

/// What each row of a statement means beside the row, as ``ChangeRecorder`` decided
/// it for that row alone, as column arrays: the statement keeps those of the rows it
/// changed (a compare-and-set that did not apply keeps nothing) as its commit's row
/// (``PostgresJournal``). Per row, its effects' journal bytes, framed
/// (``PostgresJournal/frame(_:into:)``), and its leaves, each all one after another
/// in one value (the statement's as they are when every row applies), each row's at
/// an offset and a length; and its leaves' list entries `@.ORDINAL` (`@` standing
/// for the run).
struct RowJournal {
    var effects: [UInt8] = []
    var effectAt: [Int32] = []
    var effectLength: [Int32] = []
    var leaves: [UInt8] = []
    var leafAt: [Int32] = []
    var leafLength: [Int32] = []
    var refs: [String] = []
    /// The leaves given so far.
    var run = 0

    /// Adds the next row's effects (a row whose change writes no record is floored
    /// at its own creation time).
    mutating func add(_ e: CommitEffects, createdAt: Timestamp) {
        var e = e
        if case .lowest = e.floor {} else { e.floor = .lowest(createdAt) }
        effectAt.append(Int32(clamping: effects.count))
        PostgresJournal.frame(e, into: &effects)
        effectLength.append(Int32(clamping: effects.count) - effectAt[effectAt.count - 1])
        leafAt.append(Int32(clamping: leaves.count))
        leafLength.append(Int32(clamping: e.leaves.count))
        leaves.append(contentsOf: e.leaves)
        refs.append((0..<e.leafCount).map { "@.\(run + $0)" }.joined(separator: " "))
        run += e.leafCount
    }

    /// Binds the leaves and the effects, each with their offsets and lengths, in
    /// the order ``PostgresLedger/commit(_:from:first:total:rows:)`` takes them.
    func bind(_ b: inout PostgresBindings) {
        b.append(ByteBuffer(bytes: leaves)); b.append(leafAt); b.append(leafLength)
        b.append(ByteBuffer(bytes: effects)); b.append(effectAt); b.append(effectLength)
    }
}
