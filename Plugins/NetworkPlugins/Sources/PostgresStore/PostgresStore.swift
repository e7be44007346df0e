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
    /// Log text this handle appended since its last fold (``appended(_:)``).
    var loggedBytes = 0
    /// The log row up to which to fold after that commit.
    var foldAfterCommit: Int64?
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
        StoreCapabilities(counting: self, floors: self, ledger: self, dueIndex: self)
    }

    public func add(_ records: [EncodedMessage]) throws(MsgError) -> [AddResult] {
        if records.isEmpty { return [] }
        try writable()
        let columns = try RowColumns(records, preps: LedgerPrep.batch(records, stored: true))
        let rows = try db.query(columns.insert(into: table, schema: db.address.schema), "storing \(records.count) messages")
        var inserted = Set<String>()
        var log: (Int64, Int32)?
        for row in rows {
            let (id, appended) = try Self.idAndLog(row, "storing messages")
            inserted.insert(id)
            log = appended
        }
        try appended(log)
        PostgresFloors.pruneNowAndThen(db)
        // The first record with an id is the one stored; later ones, and ids stored
        // before, are answered with what the store holds.
        var seen: [String: Message] = [:]
        var existing: [String: Message] = [:]
        let missing = records.filter { !inserted.contains($0.message.id) }.map(\.message.id)
        if !missing.isEmpty {
            try list(Query(ids: Set(missing))) { (r) throws(MsgError) -> Bool in
                existing[r.message.id] = r.message
                return true
            }
        }
        return records.map { r in
            let id = r.message.id
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
        let ids = changes.map(\.message.id)
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
    /// some were not replaced, those read under lock and written with the leaves
    /// their stored rows call for (``PostgresLedger``).
    private func replace(_ changes: [Change]) throws(MsgError) -> [Bool] {
        let s = db.address.schema
        let ids = changes.map(\.message.id)
        let records = changes.map(\.record)
        let preps = LedgerPrep.batch(records, stored: false)
        let rows = try db.query(try RowColumns(records, expected: changes.map(\.expected), preps: preps).update(table, schema: s),
                                "updating \(changes.count) messages")
        var done = try applied(ids, rows, "updating messages")
        let rest = done.indices.filter { !done[$0] }
        if rest.isEmpty { return done }
        // What the ledger has of each, under the rows' locks: those not found in
        // their expected status are not replaced.
        var b = PostgresBindings(capacity: 2)
        b.append(rest.map { ids[$0] })
        b.append(rest.map { changes[$0].expected.rawValue })
        let held = try db.query(PostgresQuery(unsafeSQL: """
            SELECT m.id, m.history_n, m.content_fp FROM \(table) AS m JOIN unnest($1::text[], $2::text[]) AS u(id, expected)
            ON m.id = u.id AND m.status = u.expected FOR UPDATE OF m
            """, binds: b), "reading \(rest.count) messages")
        var have: [String: (n: Int, print: Int32)] = [:]
        for row in held {
            do {
                let (id, n, print) = try row.decode((String, Int32, Int32).self)
                have[id] = (Int(n), print)
            } catch {
                throw Self.corrupt("a message's ledger", error)
            }
        }
        let found = rest.compactMap { (i) -> (i: Int, n: Int, print: Int32)? in have[ids[i]].map { (i, $0.n, $0.print) } }
        if found.isEmpty { return done }
        let applying = found.map(\.i)
        var columns = try RowColumns(applying.map { records[$0] }, expected: applying.map { changes[$0].expected },
                                     preps: applying.map { preps[$0] })
        var run: [UInt8] = []
        var count = 0
        for (i, n, print) in found {
            let r = records[i]
            // Entries appended to the same content, or the whole state anew.
            let entries = r.message.history.count
            let leaves = n >= 0 && print == Int32(truncatingIfNeeded: preps[i].print) && entries >= n
                ? try LedgerLeaf.entries(of: r, from: n) : [try LedgerLeaf.state(of: r)]
            columns.refs.append(leaves.indices.map { "@.\(count + $0)" }.joined(separator: " "))
            for leaf in leaves { leaf.write(to: &run) }
            count += leaves.count
        }
        let again = try db.query(columns.update(table, schema: s, run: (count, run)), "updating \(applying.count) messages")
        let replaced = try applied(applying.map { ids[$0] }, again, "updating messages")
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
        var b = PostgresBindings(capacity: 5)
        b.append(removals.map(\.id))
        b.append(removals.map { $0.statuses.map { $0.map(\.rawValue).sorted().joined(separator: ",") } ?? "*" })
        var leaves: [UInt8] = []
        var at: [Int32] = []
        var length: [Int32] = []
        for r in removals {
            at.append(Int32(clamping: leaves.count))
            try LedgerLeaf.removed(r.id).write(to: &leaves)
            length.append(Int32(clamping: leaves.count) - at[at.count - 1])
        }
        b.append(ByteBuffer(bytes: leaves)); b.append(at); b.append(length)
        let gone = PostgresTally.figure("del.recipient", "del.status", "-1")
        // Each removed message's list kept, with its removal appended (``PostgresLedger``).
        let rows = try db.query(PostgresQuery(unsafeSQL: """
            WITH \(PostgresLedger.nextRun(s)),
            del AS (
            DELETE FROM \(table) AS m USING unnest($1::text[], $2::text[], $4::int4[], $5::int4[]) WITH ORDINALITY AS r(id, statuses, leaf_at, leaf_length, n)
            WHERE m.id = r.id AND (r.statuses = '*' OR m.status = ANY(string_to_array(r.statuses, ',')))
            RETURNING m.id, m.recipient, m.status, m.created_at, m.ledger, r.leaf_at, r.leaf_length, r.n),
            kept AS (INSERT INTO \(s).ledger_removed (id, ledger)
                     SELECT del.id, \(PostgresLedger.appended("del.ledger", PostgresLedger.ref("del.n"))) FROM del ORDER BY del.n),
            leaves AS (\(PostgresLedger.run(s, from: "del", leaves: "$3::bytea", total: "cardinality($1::text[])",
                                            rows: "SELECT n, leaf_at, leaf_length FROM del"))),
            floor AS (\(PostgresFloors.append(db.address.schema, "created_at", from: "del"))),
            ages AS (\(PostgresAges.append(db.address.schema, from: "del", status: "status", sign: -1))),
            log AS (\(PostgresTally.append(db.address.schema, gone, from: "del")))
            SELECT id, (SELECT seq FROM log), (SELECT bytes FROM log) FROM del
            """, binds: b), "removing \(removals.count) messages")
        let done = try applied(removals.map(\.id), rows, "removing messages")
        PostgresFloors.pruneNowAndThen(db)
        return done
    }

    /// Runs `body` in one transaction, or in the one open already (an update inside
    /// a claim); a fold of the counts that fell due in it runs after its commit, in a
    /// transaction of its own (``PostgresTally/fold(_:upTo:)``).
    func committing<R>(_ what: String, _ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        if inTransaction { return try body() }
        inTransaction = true
        let result: R
        do throws(MsgError) {
            result = try db.transaction(what, body)
        } catch {
            inTransaction = false
            foldAfterCommit = nil
            throw error
        }
        inTransaction = false
        if let seq = foldAfterCommit {
            foldAfterCommit = nil
            try PostgresTally.fold(db, upTo: seq)
        }
        PostgresFloors.pruneNowAndThen(db)
        return result
    }

    /// - Throws: `storeIO` when this store was opened for reading only.
    func writable() throws(MsgError) {
        guard access == .write else { throw MsgError(.storeIO, "the queue in \(table) was opened for reading only") }
    }

    // MARK: Rows

    /// Per id in `ids`, whether `rows` (each an id, with the seq and size of the log
    /// row the statement appended) names it; an id named once counts once. Folds the
    /// counts when one falls due (``appended(_:)``).
    func applied(_ ids: [String], _ rows: PostgresQueryResult, _ what: String) throws(MsgError) -> [Bool] {
        var done = Set<String>()
        var log: (Int64, Int32)?
        for row in rows {
            let (id, appended) = try Self.idAndLog(row, what)
            done.insert(id)
            log = appended
        }
        try appended(log)
        return ids.map { done.remove($0) != nil }
    }

    /// An id, and the seq and size of the log row appended, as the counting
    /// statements return them (no log row when nothing moved a figure).
    static func idAndLog(_ row: PostgresRow, _ what: String) throws(MsgError) -> (String, (Int64, Int32)?) {
        do {
            let (id, seq, bytes) = try row.decode((String, Int64?, Int32?).self)
            guard let seq, let bytes else { return (id, nil) }
            return (id, (seq, bytes))
        } catch {
            throw corrupt(what, error)
        }
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
    }
}
