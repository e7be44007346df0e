import MsgKit

/// The per-destination claim (``Store/claim(_:_:)``) and the `destinations` table.
extension SQLiteStore {
    public func claim(_ request: ClaimRequest, _ planner: any ClaimPlanner) throws(MsgError) -> [EncodedMessage] {
        try guarded { () throws(MsgError) in
            try db.transaction("claiming messages") { () throws(MsgError) in
                try planner.begin(states: try readStates())
                if !request.busy.isEmpty {
                    // Ids and recipients only (the status index covers no text): most
                    // rows in flight are the caller's own, and it needs no more of them.
                    let (sql, binder) = SQLiteQuery.select("id, recipient", Query(statuses: request.busy))
                    let s = try db.statement(sql)
                    binder(s)
                    var rows: [(id: String, to: String)] = []
                    while try s.step("claiming messages") {
                        rows.append((String(decoding: s.bytes(0), as: UTF8.self), String(decoding: s.bytes(1), as: UTF8.self)))
                    }
                    s.reset()
                    for row in rows {
                        // Inside the write transaction the row cannot go away; a read
                        // that fails anyway gives the planner a stand-in with its id.
                        planner.busy(id: row.id, to: row.to, record: {
                            (try? fetch(row.id))??.message
                                ?? EncodedMessage.damaged(id: row.id, to: row.to, createdAt: .now(), text: [],
                                                          error: MsgError(.storeIO, "it could not be read"), now: .now()).message
                        })
                    }
                }
                var unlimited = request.query
                unlimited.limit = nil
                let (sql, binder) = SQLiteQuery.select(Row.columns, unlimited)
                let s = try db.statement(sql)
                binder(s)
                var taken: [(message: Message, expected: Status)] = []
                var damaged: [(record: EncodedMessage, expected: Status)] = []
                var scanned = 0
                var more = request.limit > 0
                while more && taken.count < request.limit && scanned < request.scanLimit {
                    // Chunks decoded on all cores, considered in FIFO order on this thread.
                    var rows: [Row.Copy] = []
                    let want = min(request.scanLimit - scanned, Self.claimChunk, max(request.limit - taken.count, 256))
                    while rows.count < want {
                        guard try s.step("claiming messages") else { more = false; break }
                        rows.append(Row(s).copy())
                    }
                    scanned += rows.count
                    for (row, r) in zip(rows, Self.decodeAll(rows)) {
                        if taken.count == request.limit { more = false; break }
                        let answer = try planner.consider(r.message)
                        if r.message.isDamaged && row.status != Status.dead.rawValue {
                            if let expected = Status(rawValue: row.status) { damaged.append((r, expected)) }
                            continue
                        }
                        if case .take(let x) = answer { taken.append((x, r.message.status)) }
                        if answer == .stop { more = false; break }
                    }
                }
                s.reset()
                var claimed: [EncodedMessage] = []
                claimed.reserveCapacity(taken.count)
                let update = try replaceStatement()
                for (r, t) in zip(Self.encodeAll(taken.map(\.message)), taken) where try replace(r, expected: t.expected, update) {
                    claimed.append(r)
                }
                for d in damaged { _ = try replace(d.record, expected: d.expected, update) }
                try writeStates(planner.finish())
                return claimed
            }
        }
    }

    public func destinationStates() throws(MsgError) -> [String: String] {
        try guarded { () throws(MsgError) in try readStates() }
    }

    private func readStates() throws(MsgError) -> [String: String] {
        let s = try db.statement("SELECT key, state FROM destinations")
        defer { s.reset() }
        var states: [String: String] = [:]
        while try s.step("reading destination states") {
            states[String(decoding: s.bytes(0), as: UTF8.self)] = String(decoding: s.bytes(1), as: UTF8.self)
        }
        return states
    }

    private func writeStates(_ states: [String: String?]) throws(MsgError) {
        if states.isEmpty { return }
        let upsert = try db.statement("INSERT INTO destinations (key, state) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET state = ?2")
        let delete = try db.statement("DELETE FROM destinations WHERE key = ?1")
        for (key, state) in states {
            let s = state == nil ? delete : upsert
            s.reset()
            s.bind(1, key)
            if let state { s.bind(2, state) }
            try s.run("storing a destination state")
        }
    }
}
