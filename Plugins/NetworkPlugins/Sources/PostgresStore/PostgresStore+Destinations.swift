import MsgKit
import PostgresNIO

/// The one claim (``Store/claimSession(_:)``) and the `destinations` table.
extension PostgresStore {
    /// One transaction. Claims on every host run at once: each holds the
    /// destinations it plans for with transaction-scoped advisory locks
    /// (``PostgresClaimSession/reserve(_:wait:keysAreRecipients:)``), so workers take
    /// disjoint destinations and none waits for another's claim.
    public func claimSession<R>(_ body: (any ClaimSession) throws(MsgError) -> R) throws(MsgError) -> R {
        try writable()
        return try committing("claiming messages") { () throws(MsgError) -> R in
            // The claim's reads want the FIFO index and its order (a LIMIT stops them
            // early); a planner that trusts a freshly filled table's statistics sorts
            // the whole queue instead (71 ms instead of 3 for 1,024 of 67,000).
            try db.query("SELECT set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true)", "claiming messages")
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
        if states.isEmpty { return }
        // Its row of the journal, as the recorder says (``PostgresJournal``).
        var recorder = ChangeRecorder()
        recorder.wroteStates()
        var framed: [UInt8] = []
        PostgresJournal.frame(recorder.take(), into: &framed)
        var j = PostgresBindings(capacity: 1)
        j.append(ByteBuffer(bytes: framed))
        try db.query(PostgresQuery(unsafeSQL: PostgresJournal.appendAlone(db.address.schema), binds: j), "noting where the queue changed")
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
final class PostgresClaimSession: ClaimSession, DestinationLocks {
    var locks: (any DestinationLocks)? { self }

    private let store: PostgresStore
    /// Destinations this session holds (``reserve(_:wait:keysAreRecipients:)``).
    private var held = 0
    /// Whether this claim holds destinations (it said so), or holds the whole store
    /// (it read candidates without saying so).
    private var holdsDestinations = false
    private var holdsStore = false
    /// The most destinations one claim holds (a claim's default batch): each lock is
    /// an entry of the server's shared lock table (`max_locks_per_transaction` x
    /// `max_connections`, 6,400 by default), so six workers claiming at once fit in
    /// it with room to spare.
    static let mostHeld = 1024

    init(_ store: PostgresStore) { self.store = store }

    /// Transaction-scoped advisory locks, one per key (its `hashtext` under the
    /// schema's): taken without waiting (`pg_try_advisory_xact_lock`), or, with
    /// `wait`, all of them in the order of their hashes, the same in every session.
    /// The records in flight are read by a statement after the one that locked, so
    /// they include what the keys' earlier holders committed.
    func reserve(_ keys: [String], wait: Bool, keysAreRecipients: Bool) throws(MsgError) -> Reservation {
        holdsDestinations = true
        let asked = wait ? keys : Array(keys.prefix(max(0, Self.mostHeld - held)))
        var granted = Set<String>()
        var busy = Set<String>()
        if !asked.isEmpty {
            var b = PostgresBindings()
            b.append(store.table)
            b.append(asked)
            let sql = wait
                ? "SELECT k, pg_advisory_xact_lock(hashtext($1), h) IS NULL FROM (SELECT k, hashtext(k) AS h FROM unnest($2::text[]) AS k ORDER BY h) AS s"
                : "SELECT k, pg_try_advisory_xact_lock(hashtext($1), hashtext(k)) FROM unnest($2::text[]) AS k"
            let rows = try store.db.query(PostgresQuery(unsafeSQL: sql, binds: b), "holding destinations for a claim")
            for row in rows {
                do {
                    let (key, ok) = try row.decode((String, Bool).self)
                    if ok || wait { granted.insert(key) } else { busy.insert(key) }
                } catch {
                    throw PostgresStore.corrupt("a destination's lock", error)
                }
            }
            held += granted.count
        }
        if granted.isEmpty { return Reservation(granted: [], busy: busy, inFlight: []) }
        guard keysAreRecipients else { return Reservation(granted: granted, busy: busy, inFlight: try inFlight() ?? []) }
        // Per recipient through `messages_sending` (a probe each), not a walk of every
        // record in flight.
        var b = PostgresBindings()
        b.append(granted.sorted())
        let rows = try store.db.query(PostgresQuery(unsafeSQL: """
            SELECT m.id, m.recipient FROM unnest($1::text[]) AS k JOIN \(store.table) AS m ON m.recipient = k WHERE m.status = 'sending'
            """, binds: b), "reading the messages in flight")
        return Reservation(granted: granted, busy: busy, inFlight: try Self.inFlight(rows))
    }

    /// Ids and recipients of the rows `sending` (never nil: another host may have
    /// changed them, and the server does not say cheaply).
    func inFlight() throws(MsgError) -> [InFlight]? {
        try Self.inFlight(store.db.query(PostgresFilter(Query(statuses: [.sending])).select("id, recipient", from: store.table, limit: nil),
                                         "reading the messages in flight"))
    }

    /// Rows of an id and a recipient.
    private static func inFlight(_ rows: PostgresQueryResult) throws(MsgError) -> [InFlight] {
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
        if !holdsDestinations && !holdsStore {
            // A claim of records, not destinations (recover, redrive, receipts): one
            // at a time, so two of them never race for the same rows.
            var b = PostgresBindings()
            b.append(store.table)
            try store.db.query(PostgresQuery(unsafeSQL: "SELECT pg_advisory_xact_lock(hashtext($1 || ' records'), 0)", binds: b), "waiting for the claim lock")
            holdsStore = true
        }
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
