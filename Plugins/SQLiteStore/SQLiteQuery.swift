import MsgKit

/// Turns a ``Query`` into SQL and the bindings for it. The SQL text depends only
/// on which filters are set, so statements are cached per shape.
///
/// A query for statuses that are all open (not sent, delivered or read) reads
/// `messages_open`, in FIFO order, with the recipient in the index: a claim's
/// `skipping` recipients are then left out without reading their rows.
enum SQLiteQuery {
    typealias Binder = (SQLiteStatement) -> Void

    /// `SELECT columns … ORDER BY created_at, id`, after `position` and without the
    /// recipients in `skipping` when given, at most `limit` rows.
    static func select(_ columns: String, _ q: Query, after position: ClaimPosition? = nil, skipping: Set<String> = [],
                       limit: Int? = nil) -> (String, Binder) {
        let (terms, binder, usesOpen) = whereTerms(q)
        var all = terms
        if position != nil { all.append("(created_at, id) > (?10, ?11)") }
        if !skipping.isEmpty { all.append("recipient NOT IN (SELECT value FROM json_each(?9))") }
        let index = usesOpen && q.ids == nil ? " INDEXED BY messages_open" : ""
        var sql = "SELECT \(columns) FROM messages\(index)" + (all.isEmpty ? "" : " WHERE " + all.joined(separator: " AND "))
        sql += " ORDER BY created_at, id"
        let limit = limit ?? q.limit
        if limit != nil { sql += " LIMIT ?20" }
        return (sql, { s in
            binder(s)
            if let position {
                s.bind(10, position.createdAt.milliseconds)
                s.bind(11, position.id)
            }
            if !skipping.isEmpty { s.bind(9, jsonArray(skipping.sorted())) }
            if let limit { s.bind(20, Int64(limit)) }
        })
    }

    static func count(_ q: Query) -> (String, Binder) {
        let (terms, binder, _) = whereTerms(q)
        let clause = terms.isEmpty ? "" : " WHERE " + terms.joined(separator: " AND ")
        if let limit = q.limit {
            return ("SELECT count(*) FROM (SELECT 1 FROM messages\(clause) LIMIT ?20)", { s in
                binder(s)
                s.bind(20, Int64(limit))
            })
        }
        return ("SELECT count(*) FROM messages\(clause)", binder)
    }

    /// The terms of `q` and their binder; whether they keep to open records.
    private static func whereTerms(_ q: Query) -> ([String], Binder, Bool) {
        var terms: [String] = []
        var usesOpen = false
        if let statuses = q.statuses {
            if !statuses.isEmpty, statuses.allSatisfy(StoredColumns.isOpen) {
                terms.append("open IS NOT NULL")
                usesOpen = true
            }
            terms.append(statuses.count == 1 ? "status = ?1" : "status IN (SELECT value FROM json_each(?1))")
        }
        if q.to != nil { terms.append("recipient = ?2") }
        if q.since != nil { terms.append("created_at >= ?3") }
        if q.until != nil { terms.append("created_at < ?4") }
        if q.dueBy != nil { terms.append("(due_at IS NULL OR due_at <= ?5)") }
        if q.leaseEndedBy != nil { terms.append("(lease_until IS NULL OR lease_until < ?6)") }
        if q.updatedBy != nil { terms.append("updated_at <= ?7") }
        if q.ids != nil { terms.append("id IN (SELECT value FROM json_each(?8))") }
        return (terms, { s in
            if let statuses = q.statuses {
                if statuses.count == 1 { s.bind(1, statuses.first!.rawValue) } else { s.bind(1, jsonArray(statuses.map(\.rawValue).sorted())) }
            }
            if let to = q.to { s.bind(2, to) }
            if let since = q.since { s.bind(3, since.milliseconds) }
            if let until = q.until { s.bind(4, until.milliseconds) }
            if let due = q.dueBy { s.bind(5, due.milliseconds) }
            if let lease = q.leaseEndedBy { s.bind(6, lease.milliseconds) }
            if let updated = q.updatedBy { s.bind(7, updated.milliseconds) }
            if let ids = q.ids { s.bind(8, jsonArray(ids.sorted())) }
        }, usesOpen)
    }

    /// A JSON array of strings, for `json_each`.
    static func jsonArray(_ values: [String]) -> String {
        var w = JSONWriter()
        w.value(.array(values.map { .string($0) }))
        return String(decoding: w.bytes, as: UTF8.self)
    }
}
