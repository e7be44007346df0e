import MsgKit
import PostgresNIO

/// The one claim (``Store/claimSession(_:)``) and the `destinations` table.
extension PostgresStore {
    /// One transaction under a transaction-scoped advisory lock on the queue: one
    /// claim at a time on every host, so each sees the others' `sending` rows (a
    /// destination's order needs that); outcomes and other writes do not take it.
    public func claimSession<R>(_ body: (any ClaimSession) throws(MsgError) -> R) throws(MsgError) -> R {
        try writable()
        let schema = db.address.schema
        return try committing("claiming messages") { () throws(MsgError) -> R in
            // The claim's reads want the FIFO index and its order (a LIMIT stops them
            // early); a planner that trusts a freshly filled table's statistics sorts
            // the whole queue instead (71 ms instead of 3 for 1,024 of 67,000).
            try db.query("SELECT set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true), pg_advisory_xact_lock(hashtext('msg claim'), hashtext(\(schema)))",
                         "waiting for the claim lock")
            return try body(PostgresClaimSession(self))
        }
    }

    public func destinationStates(_ keys: Set<String>?) throws(MsgError) -> [String: String] {
        try readStates(keys)
    }

    public func nextDue(_ statuses: Set<Status>, after now: Timestamp) throws(MsgError) -> Timestamp? {
        var b = PostgresBindings()
        b.append(statuses.map(\.rawValue).sorted())
        b.append(now.milliseconds)
        let rows = try db.query(PostgresQuery(unsafeSQL: "SELECT min(due_at) FROM \(table) WHERE status = ANY($1) AND due_at > $2", binds: b),
                                "reading the next due time")
        guard let row = rows.first, let ms = try? row.decode(Int64?.self) else { return nil }
        return Timestamp(milliseconds: ms)
    }

    var destinationsTable: String { "\(db.address.schema).destinations" }

    func readStates(_ keys: Set<String>?) throws(MsgError) -> [String: String] {
        let query: PostgresQuery
        if let keys {
            if keys.isEmpty { return [:] }
            var b = PostgresBindings()
            b.append(keys.sorted())
            query = PostgresQuery(unsafeSQL: "SELECT key, state FROM \(destinationsTable) WHERE key = ANY($1)", binds: b)
        } else {
            query = PostgresQuery(unsafeSQL: "SELECT key, state FROM \(destinationsTable)")
        }
        let rows = try db.query(query, "reading destination states")
        var states: [String: String] = [:]
        for row in rows {
            do {
                let (key, state) = try row.decode((String, String).self)
                states[key] = state
            } catch {
                throw Self.corrupt("a destination state", error)
            }
        }
        return states
    }

    func writeStates(_ states: [String: String?]) throws(MsgError) {
        let set = states.compactMap { k, v in v.map { (k, $0) } }
        let removed = states.filter { $0.value == nil }.map(\.key)
        if !set.isEmpty {
            var b = PostgresBindings()
            b.append(set.map(\.0))
            b.append(set.map(\.1))
            try db.query(PostgresQuery(unsafeSQL: """
                INSERT INTO \(destinationsTable) (key, state) SELECT * FROM unnest($1::text[], $2::text[])
                ON CONFLICT (key) DO UPDATE SET state = excluded.state
                """, binds: b), "storing destination states")
        }
        if !removed.isEmpty {
            var b = PostgresBindings()
            b.append(removed)
            try db.query(PostgresQuery(unsafeSQL: "DELETE FROM \(destinationsTable) WHERE key = ANY($1)", binds: b), "storing destination states")
        }
    }
}

/// One claim inside the transaction of ``PostgresStore/claimSession(_:)``.
final class PostgresClaimSession: ClaimSession {
    private let store: PostgresStore

    init(_ store: PostgresStore) { self.store = store }

    /// Ids and recipients of the rows `sending` (never nil: another host may have
    /// changed them, and the server does not say cheaply).
    func inFlight() throws(MsgError) -> [InFlight]? {
        let rows = try store.db.query(PostgresFilter(Query(statuses: [.sending])).select("id, recipient", from: store.table, limit: nil),
                                      "reading the messages in flight")
        var out: [InFlight] = []
        for row in rows {
            do {
                let (id, to) = try row.decode((String, String).self)
                out.append(InFlight(id: id, to: to))
            } catch {
                throw PostgresStore.corrupt("a message in flight", error)
            }
        }
        return out
    }

    func record(_ id: String) throws(MsgError) -> EncodedMessage? { try store.get(id) }

    func hasStates() throws(MsgError) -> Bool {
        try !store.db.query(PostgresQuery(unsafeSQL: "SELECT 1 FROM \(store.destinationsTable) LIMIT 1"), "reading destination states").isEmpty
    }

    func states(_ keys: Set<String>) throws(MsgError) -> [String: String] { try store.readStates(keys) }

    func candidates(_ query: Query, after position: ClaimPosition?, skipping: Set<String>, limit: Int) throws(MsgError) -> [ClaimRow] {
        var filter = PostgresFilter(query)
        if let position { filter.after(createdAt: position.createdAt.milliseconds, id: position.id) }
        // A hashed subplan: `<> ALL($)` would compare each row with every key skipped
        // (51 ms instead of 2 ms for 1,024 rows past 3,000 keys held by other workers).
        if !skipping.isEmpty { filter.add("recipient NOT IN (SELECT unnest($::text[]))", skipping.sorted()) }
        let rows = try store.db.query(filter.select(StoredRow.columns, from: store.table, limit: limit), "claiming messages")
        var out: [ClaimRow] = []
        for row in rows {
            let stored = try StoredRow(row)
            guard let status = Status(rawValue: stored.status) else { continue }
            out.append(ClaimRow(record: stored.record(), status: status))
        }
        return out
    }

    func store(_ changes: [Change], states: [String: String?]) throws(MsgError) -> [Bool] {
        let applied = try store.update(changes)
        try store.writeStates(states)
        return applied
    }
}
