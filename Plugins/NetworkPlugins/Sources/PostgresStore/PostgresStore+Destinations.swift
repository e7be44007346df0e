import MsgKit
import PostgresNIO

/// The per-destination claim (``Store/claim(_:_:)``) and the `destinations` table.
extension PostgresStore {
    public func claim(_ request: ClaimRequest, _ planner: any ClaimPlanner) throws(MsgError) -> [EncodedMessage] {
        try writable()
        let schema = db.address.schema
        return try db.transaction("claiming messages") { () throws(MsgError) in
            // One planner at a time per queue, on every host: a destination's order
            // needs each claim to see the `sending` rows the others committed.
            try db.query("SELECT pg_advisory_xact_lock(hashtext('msg claim'), hashtext(\(schema)))", "waiting for the claim lock")
            try planner.begin(states: try readStates())
            if !request.busy.isEmpty {
                // Ids and recipients only: most rows in flight are the caller's own,
                // and it needs no more of them.
                let rows = try db.query(PostgresFilter(Query(statuses: request.busy)).select("id, recipient", from: table, limit: nil),
                                        "reading the messages in flight")
                var busy: [(id: String, to: String)] = []
                for row in rows {
                    do {
                        busy.append(try row.decode((String, String).self))
                    } catch {
                        throw Self.corrupt("a message in flight", error)
                    }
                }
                for (id, to) in busy {
                    planner.busy(id: id, to: to, record: {
                        (try? get(id))??.message
                            ?? EncodedMessage.damaged(id: id, to: to, createdAt: .now(), text: [],
                                                      error: MsgError(.storeIO, "it could not be read"), now: .now()).message
                    })
                }
            }
            var filter = PostgresFilter(request.query)
            var taken: [Message] = []
            var expected: [Status] = []
            var damaged: [EncodedMessage] = []
            var damagedExpected: [Status] = []
            var scanned = 0
            var more = request.limit > 0
            while more && taken.count < request.limit && scanned < request.scanLimit {
                let want = min(request.scanLimit - scanned, Self.page)
                let rows = try db.query(filter.select(StoredRow.columns, from: table, limit: want), "claiming messages")
                var n = 0
                var last: (Int64, String)?
                for row in rows {
                    n += 1
                    let stored = try StoredRow(row)
                    last = (stored.createdAt, stored.id)
                    guard more && taken.count < request.limit else { continue }
                    let m = stored.record().message
                    let answer = try planner.consider(m)
                    if m.isDamaged && stored.status != Status.dead.rawValue {
                        if let status = Status(rawValue: stored.status) {
                            damaged.append(EncodedMessage(m))
                            damagedExpected.append(status)
                        }
                        continue
                    }
                    if case .take(let x) = answer {
                        taken.append(x)
                        expected.append(m.status)
                    }
                    if answer == .stop { more = false }
                }
                scanned += n
                guard n == want, let last else { break }
                filter.after(createdAt: last.0, id: last.1)
            }
            if !damaged.isEmpty {
                try db.query(RowColumns(damaged, expected: damagedExpected).update(table), "setting aside \(damaged.count) damaged records")
            }
            try writeStates(planner.finish())
            if taken.isEmpty { return [] }
            let encoded = taken.map { EncodedMessage($0) }
            let rows = try db.query(RowColumns(encoded, expected: expected).update(table), "claiming \(taken.count) messages")
            let applied = try Self.applied(taken.map(\.id), rows, "claiming messages")
            return zip(encoded, applied).filter(\.1).map(\.0)
        }
    }

    public func destinationStates() throws(MsgError) -> [String: String] {
        try readStates()
    }

    private var destinationsTable: String { "\(db.address.schema).destinations" }

    private func readStates() throws(MsgError) -> [String: String] {
        let rows = try db.query(PostgresQuery(unsafeSQL: "SELECT key, state FROM \(destinationsTable)"), "reading destination states")
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

    private func writeStates(_ states: [String: String?]) throws(MsgError) {
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
