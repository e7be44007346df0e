import MsgKit
import MsgSupport

/// One claim inside a `BEGIN IMMEDIATE` transaction of a ``SQLiteStore``
/// (``ClaimSession``): no other process writes until it commits.
final class SQLiteClaimSession: ClaimSession {
    private let store: SQLiteStore
    private var db: SQLiteDatabase { store.db }
    /// Every destination state, read once when there are few of them.
    private var allStates: [String: String]?
    private var readAllStates = false

    init(_ store: SQLiteStore) { self.store = store }

    /// The records `sending`, read through `messages_inflight`; nil when no other
    /// connection has committed since this handle's last claim (`PRAGMA
    /// data_version` is unchanged by a connection's own commits).
    func inFlight() throws(MsgError) -> [InFlight]? {
        let version = try db.integer("PRAGMA data_version")
        defer { store.claimVersion = version }
        if store.claimVersion == version { return nil }
        let s = try db.statement("SELECT id, recipient, rid FROM messages INDEXED BY messages_inflight WHERE lease_until IS NOT NULL")
        defer { s.reset() }
        var rows: [InFlight] = []
        while try s.step("reading the messages in flight") {
            let id = String(decoding: s.bytes(0), as: UTF8.self)
            rows.append(InFlight(id: id, to: String(decoding: s.bytes(1), as: UTF8.self)))
        }
        return rows
    }

    func record(_ id: String) throws(MsgError) -> EncodedMessage? {
        try store.fetch(id)
    }

    func hasStates() throws(MsgError) -> Bool {
        try readAll()
        return allStates.map { !$0.isEmpty } ?? true
    }

    /// Per key; all at once when the table holds few (the common case: none).
    func states(_ keys: Set<String>) throws(MsgError) -> [String: String] {
        if keys.isEmpty { return [:] }
        try readAll()
        if let allStates {
            var found: [String: String] = [:]
            for key in keys { if let state = allStates[key] { found[key] = state } }
            return found
        }
        return try store.readStates(keys)
    }

    /// Reads every state once per claim when there are at most 256.
    private func readAll() throws(MsgError) {
        if !readAllStates {
            readAllStates = true
            let s = try db.statement("SELECT key, state FROM destinations LIMIT 257")
            var all: [String: String] = [:]
            while try s.step("reading destination states") {
                all[String(decoding: s.bytes(0), as: UTF8.self)] = String(decoding: s.bytes(1), as: UTF8.self)
            }
            s.reset()
            if all.count <= 256 { allStates = all }
        }
    }

    func candidates(_ query: Query, after position: ClaimPosition?, skipping: Set<String>, limit: Int) throws(MsgError) -> [ClaimRow] {
        var q = query
        q.limit = nil
        let (sql, binder) = SQLiteQuery.select(Row.columns, q, after: position, skipping: skipping, limit: limit)
        let s = try db.statement(sql)
        binder(s)
        var rows: [Row.Copy] = []
        while try s.step("claiming messages") { rows.append(Row(s).copy()) }
        s.reset()
        // Decoded on all cores; considered in FIFO order by the caller.
        let records = SQLiteStore.decodeAll(rows)
        var out: [ClaimRow] = []
        out.reserveCapacity(rows.count)
        for (row, r) in zip(rows, records) {
            guard let status = Status(rawValue: row.status) else { continue }
            store.rowids[RowKey(row.id)] = row.rid
            out.append(ClaimRow(record: r, status: status))
        }
        return out
    }

    func store(_ changes: [Change], states: [String: String?]) throws(MsgError) -> [Bool] {
        let preps = LedgerPrep.batch(changes.map(\.record), stored: false)
        let applied = try changes.indices.map { (i) throws(MsgError) -> Bool in
            try store.replace(changes[i].record, expected: changes[i].expected, prep: preps[i])
        }
        try store.writeStates(states)
        allStates = nil
        readAllStates = false
        return applied
    }
}
