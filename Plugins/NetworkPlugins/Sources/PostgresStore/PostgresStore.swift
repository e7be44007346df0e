import MsgKit
import MsgSupport
import NIOCore
import PostgresNIO

/// The `postgres://` store: one queue shared by `msg` processes on any number of
/// hosts, kept in an existing PostgreSQL server.
///
/// Every call is one commit. Batches travel as column arrays (``RowColumns``), so
/// a batch costs one statement whatever its size: group commit, as in the other
/// stores. Claims lock their rows with `FOR UPDATE SKIP LOCKED`, so concurrent
/// workers take disjoint batches without waiting for each other, and the
/// compare-and-set on status means a message is never moved on twice.
public final class PostgresStore: Store, DueIndex {
    let db: BlockingConnection
    let table: String
    private let access: StoreAccess
    /// Whether a transaction of ``committing(_:_:)`` is open: a fold waits for its commit.
    var inTransaction = false
    /// Whether the snapshot of ``ledgerRead(_:)`` is open: reads stay in it.
    var inSnapshot = false
    /// The numbered runs, read once in that snapshot.
    var runs: PostgresLedger.Runs?
    /// Journal bytes this handle appended since its last fold (``appended(_:bytes:)``).
    var appendedBytes = 0
    /// Whether to fold after the transaction's commit.
    var foldAfterCommit = false
    /// Rows read per round trip when listing and claiming.
    static let page = 1000

    /// Connects to the server in `url`; for `.write` creates the schema on first use,
    /// for `.read` requires it.
    /// - Throws: `config` for a bad URL, a refused login or a missing database;
    ///   `storeIO` (no schema yet, for `.read`).
    public init(url: PluginURL, access: StoreAccess = .write) throws(MsgError) {
        let address = try PostgresAddress(url)
        db = try BlockingConnection(address, password: try PassFile.password(for: address))
        table = "\(address.schema).messages"
        self.access = access
        if access == .write { try PostgresSchema.migrate(db) } else { try PostgresSchema.check(db) }
    }

    // MARK: Store

    public var capabilities: StoreCapabilities {
        StoreCapabilities(journal: self, dueIndex: self)
    }

    public func add(_ records: [EncodedMessage]) throws(MsgError) -> [AddResult] {
        if records.isEmpty { return [] }
        try writable()
        let columns = try RowColumns(records, preps: LedgerPrep.batch(records, stored: true))
        let rows = try db.query(columns.insert(into: table, schema: db.address.schema), "storing \(records.count) messages")
        let inserted = Set(try applied(records.map(\.id), rows, columns.journal.effects.count, "storing messages")
            .enumerated().compactMap { $0.element ? records[$0.offset].id : nil })
        // The first record with an id is the one stored; later ones, and ids stored
        // before, are answered with what the store holds.
        var seen: [String: Message] = [:]
        var existing: [String: Message] = [:]
        let missing = records.filter { !inserted.contains($0.id) }.map(\.id)
        if !missing.isEmpty {
            try list(Query(ids: Set(missing))) { (r) throws(MsgError) -> Bool in
                existing[r.id] = r.message
                return true
            }
        }
        return records.map { r in
            let id = r.id
            if inserted.contains(id), seen[id] == nil {
                seen[id] = r.message
                return AddResult(message: r.message, inserted: true)
            }
            return AddResult(message: seen[id] ?? existing[id] ?? r.message, inserted: false)
        }
    }

    public func get(_ id: String) throws(MsgError) -> EncodedMessage? {
        let rows = try db.query("SELECT \(unescaped: StoredRow.columns) FROM \(unescaped: table) WHERE id = \(id)", "reading message \(id)")
        guard let row = rows.first else { return nil }
        return try StoredRow(row).record()
    }

    /// Each record is decoded, also for ``listJSON(_:includeHistory:_:)`` (the default
    /// one, on this): text edited by hand is then never printed broken, and the
    /// round trip to the server costs more than the decoding.
    public func list(_ query: Query, _ body: (EncodedMessage) throws(MsgError) -> Bool) throws(MsgError) {
        try pages(query) { (row) throws(MsgError) -> Bool in try body(row.record()) }
    }

    /// Calls `body` with each row matching `query` in FIFO order until it returns false:
    /// pages, each starting after the last row of the one before, inside one read-only
    /// snapshot, so a long listing sees one state of the queue.
    private func pages(_ query: Query, _ body: (StoredRow) throws(MsgError) -> Bool) throws(MsgError) {
        try snapshot("listing messages") { () throws(MsgError) in
            var left = query.limit ?? Int.max
            var filter = PostgresFilter(query)
            while left > 0 {
                let want = min(left, Self.page)
                let rows = try db.query(filter.select(StoredRow.columns, from: table, limit: want), "listing messages")
                var last: (Int64, String)?
                var n = 0
                for row in rows {
                    n += 1
                    let stored = try StoredRow(row)
                    last = (stored.createdAt, stored.id)
                    if try !body(stored) { return }
                }
                guard n == want, let last else { return }
                left -= n
                filter.after(createdAt: last.0, id: last.1)
            }
        }
    }

    /// Runs `body` in one read-only snapshot, or in the one ``ledgerRead(_:)`` holds.
    func snapshot<R>(_ what: String, _ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        if inSnapshot { return try body() }
        return try db.transaction(what) { () throws(MsgError) -> R in
            try db.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", what)
            return try body()
        }
    }

    public func count(_ query: Query) throws(MsgError) -> Int {
        let rows = try db.query(PostgresFilter(query).count(from: table, limit: query.limit), "counting messages")
        guard let row = rows.first else { return 0 }
        do { return Int(try row.decode(Int64.self)) } catch { throw Self.corrupt("a count", error) }
    }

    public func update(_ changes: [Change]) throws(MsgError) -> [Bool] {
        if changes.isEmpty { return [] }
        try writable()
        let ids = changes.map(\.record.id)
        if Set(ids).count == ids.count {
            return try committing("updating \(changes.count) messages") { () throws(MsgError) in try replace(changes) }
        }
        // One id twice: each change must see the one before, so one statement each.
        return try committing("updating \(changes.count) messages") { () throws(MsgError) in
            try changes.map { (c) throws(MsgError) -> Bool in try replace([c]) == [true] }
        }
    }

    /// The changes (distinct ids) by compare-and-set, in the caller's transaction:
    /// first in the common form (the stored recipient kept, one history entry
    /// appended to the same content: ``RowColumns/update(_:schema:run:)``); then, when
    /// some were not replaced, those read under lock, whose effects and leaves the
    /// recorder makes from what their rows are (``ChangeRecorder``).
    private func replace(_ changes: [Change]) throws(MsgError) -> [Bool] {
        let s = db.address.schema
        let ids = changes.map(\.record.id)
        let records = changes.map(\.record)
        let preps = LedgerPrep.batch(records, stored: false)
        let common = try RowColumns(records, expected: changes.map(\.expected), preps: preps)
        let rows = try db.query(common.update(table, schema: s), "updating \(changes.count) messages")
        var done = try applied(ids, rows, common.journal.effects.count, "updating messages")
        let rest = done.indices.filter { !done[$0] }
        if rest.isEmpty { return done }
        // What each row is, under its lock: those not found in their expected
        // status are not replaced; the others' effects are made from what was read.
        var b = PostgresBindings(capacity: 2)
        b.append(rest.map { ids[$0] })
        b.append(rest.map { changes[$0].expected.rawValue })
        let held = try db.query(PostgresQuery(unsafeSQL: """
            SELECT m.id, m.recipient, m.created_at, m.history_n, m.content_fp FROM \(table) AS m
            JOIN unnest($1::text[], $2::text[]) AS u(id, expected) ON m.id = u.id AND m.status = u.expected FOR UPDATE OF m
            """, binds: b), "reading \(rest.count) messages")
        var have: [String: (to: String, createdAt: Int64, n: Int32, print: Int32)] = [:]
        for row in held {
            do {
                let (id, to, createdAt, n, print) = try row.decode((String, String, Int64, Int32, Int32).self)
                have[id] = (to, createdAt, n, print)
            } catch {
                throw Self.corrupt("a message's ledger", error)
            }
        }
        let applying = rest.filter { have[ids[$0]] != nil }
        if applying.isEmpty { return done }
        let facts = applying.map { (i) -> StoredFacts in
            let h = have[ids[i]]!
            return StoredFacts(id: ids[i], status: changes[i].expected.rawValue, recipient: h.to, createdAt: Timestamp(milliseconds: h.createdAt),
                               ledgerEntries: Int(h.n), contentPrint: Int64(h.print))
        }
        let columns = try RowColumns(applying.map { records[$0] }, expected: applying.map { changes[$0].expected },
                                     preps: applying.map { preps[$0] }, facts: facts)
        let again = try db.query(columns.update(table, schema: s, locked: true), "updating \(applying.count) messages")
        let replaced = try applied(applying.map { ids[$0] }, again, columns.journal.effects.count, "updating messages")
        // Locked and found in their status, each is replaced: the run names them all.
        guard !replaced.contains(false) else {
            throw MsgError(.storeIO, "updating messages: a message read under lock was not replaced; nothing of this batch was stored")
        }
        for i in applying { done[i] = true }
        return done
    }

    public func remove(_ removals: [Removal]) throws(MsgError) -> [Bool] {
        if removals.isEmpty { return [] }
        try writable()
        let s = db.address.schema
        return try committing("removing \(removals.count) messages") { () throws(MsgError) -> [Bool] in
            // What each is, under its lock: the recorder makes its effects from it.
            var b = PostgresBindings(capacity: 2)
            b.append(removals.map(\.id))
            b.append(removals.map { $0.statuses.map { $0.map(\.rawValue).sorted().joined(separator: ",") } ?? "*" })
            let found = try db.query(PostgresQuery(unsafeSQL: """
                SELECT m.id, m.status, m.recipient, m.created_at FROM \(table) AS m
                WHERE m.id = ANY($1::text[]) AND EXISTS (SELECT 1 FROM unnest($1::text[], $2::text[]) AS r(id, statuses)
                              WHERE r.id = m.id AND (r.statuses = '*' OR m.status = ANY(string_to_array(r.statuses, ','))))
                FOR UPDATE
                """, binds: b), "reading \(removals.count) messages")
            var facts: [StoredFacts] = []
            for row in found {
                do {
                    let (id, status, to, createdAt) = try row.decode((String, String, String, Int64).self)
                    facts.append(StoredFacts(id: id, status: status, recipient: to, createdAt: Timestamp(milliseconds: createdAt),
                                             ledgerEntries: -1, contentPrint: 0))
                } catch {
                    throw Self.corrupt("a message", error)
                }
            }
            if facts.isEmpty { return removals.map { _ in false } }
            var journal = RowJournal()
            for f in facts {
                var recorder = ChangeRecorder()
                _ = try recorder.removed(f)
                journal.add(recorder.take(), createdAt: f.createdAt)
            }
            var d = PostgresBindings(capacity: 8)
            d.append(facts.map(\.id)); d.append(facts.map(\.status))
            journal.bind(&d)
            // Each removed message's list kept, with its removal appended (``PostgresLedger``).
            let rows = try db.query(PostgresQuery(unsafeSQL: """
                WITH \(PostgresLedger.nextRun(s)),
                del AS (
                DELETE FROM \(table) AS m USING unnest($1::text[], $2::text[]) WITH ORDINALITY AS r(id, status, n)
                WHERE m.id = r.id AND m.status = r.status
                RETURNING m.id, m.ledger, r.n),
                kept AS (INSERT INTO \(s).ledger_removed (id, ledger)
                         SELECT del.id, \(PostgresLedger.appended("del.ledger", PostgresLedger.ref("del.n"))) FROM del ORDER BY del.n),
                c AS (\(PostgresLedger.commit(s, from: "del", first: 3, total: "cardinality($1::text[])", rows: "SELECT n FROM del")))
                SELECT id, (SELECT run FROM rid) FROM del
                """, binds: d), "removing \(facts.count) messages")
            // Read under lock, each found is removed; the ones not found were not.
            var gone = Set(try applied(facts.map(\.id), rows, journal.effects.count, "removing messages")
                .enumerated().compactMap { $0.element ? facts[$0.offset].id : nil })
            // An id asked twice is removed once.
            return removals.map { gone.remove($0.id) != nil }
        }
    }

    /// Runs `body` in one transaction, or in the one open already (an update inside
    /// a claim); a fold of the counts that fell due in it runs after its commit, in a
    /// transaction of its own (``PostgresJournal/fold(_:)``).
    func committing<R>(_ what: String, _ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        if inTransaction { return try body() }
        inTransaction = true
        let result: R
        do throws(MsgError) {
            result = try db.transaction(what, body)
        } catch {
            inTransaction = false
            foldAfterCommit = false
            throw error
        }
        inTransaction = false
        if foldAfterCommit {
            foldAfterCommit = false
            try PostgresJournal.fold(db)
        }
        return result
    }

    /// - Throws: `storeIO` when this store was opened for reading only.
    func writable() throws(MsgError) {
        guard access == .write else { throw MsgError(.storeIO, "the queue in \(table) was opened for reading only") }
    }

    // MARK: Rows

    /// Per id in `ids`, whether `rows` (each an id, with the id of the journal's row
    /// the statement appended) names it; an id named once counts once. Folds the
    /// counts when one falls due (``appended(_:bytes:)``; `bytes`: of the effects bound).
    func applied(_ ids: [String], _ rows: PostgresQueryResult, _ bytes: Int, _ what: String) throws(MsgError) -> [Bool] {
        var done = Set<String>()
        var commit: Int64?
        for row in rows {
            do {
                let (id, run) = try row.decode((String, Int64?).self)
                done.insert(id)
                commit = run
            } catch {
                throw Self.corrupt(what, error)
            }
        }
        try appended(commit, bytes: bytes)
        return ids.map { done.remove($0) != nil }
    }

    static func corrupt(_ what: String, _ error: any Error) -> MsgError {
        MsgError(.corrupt, "\(what) could not be read: \(String(reflecting: error))")
    }
}

/// Registers the `postgres:` and `postgresql:` schemes.
@_cdecl("msg_plugin_register")
public func msgPluginRegister(_ abi: UInt32, _ registrar: UnsafeMutableRawPointer) -> Int32 {
    PluginRegistrar.register(abiVersion: abi, registrar: registrar, plugin: "PostgresStore", version: MsgVersion.current) { r in
        r.store(scheme: "postgres") { url, access throws(MsgError) in try PostgresStore(url: url, access: access) }
        r.store(scheme: "postgresql") { url, access throws(MsgError) in try PostgresStore(url: url, access: access) }
        // The inbox in the store's schema, which enqueue() fills (msg-inbox(1)).
        r.inbox(scheme: "postgres") { url, _ throws(MsgError) in try PostgresInbox(url: url) }
        r.inbox(scheme: "postgresql") { url, _ throws(MsgError) in try PostgresInbox(url: url) }
    }
}
