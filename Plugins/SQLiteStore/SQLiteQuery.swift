import MsgKit

/// Turns a ``Query`` into SQL and the bindings for it. The SQL text depends only
/// on which filters are set, so statements are cached per shape.
///
/// A query for statuses that are all open (queued, failed, sending) reads
/// `messages_open`, in FIFO order, with the recipient in the index: a claim's
/// `skipping` recipients are then left out without reading their rows. Dead and
/// held ones read `messages_parked`; a mix of both kinds reads the two.
enum SQLiteQuery {
    typealias Binder = (SQLiteStatement) -> Void

    /// `SELECT columns … ORDER BY created_at, id`, after `position` and without the
    /// recipients in `skipping` when given, at most `limit` rows. Statuses both open
    /// and parked (`export`'s failed and dead) read the two indexes, merged in FIFO
    /// order, so no sent record is read.
    static func select(_ columns: String, _ q: Query, after position: ClaimPosition? = nil, skipping: Set<String> = [],
                       limit: Int? = nil) -> (String, Binder) {
        let (terms, binder, index) = whereTerms(q)
        var all = terms
        if position != nil { all.append("(created_at, id) > (?10, ?11)") }
        if !skipping.isEmpty { all.append("recipient NOT IN (SELECT value FROM json_each(?9))") }
        var sql: String
        if index == .both && q.ids == nil {
            // A compound's ORDER BY names its result columns.
            let out = columns.contains("created_at") ? columns : columns + ", created_at"
            sql = Index.both.arms.map { arm in
                "SELECT \(out) FROM messages INDEXED BY \(arm.name) WHERE " + ([arm.term] + all).joined(separator: " AND ")
            }.joined(separator: " UNION ALL ")
        } else {
            let hint = q.ids == nil ? index?.name.map { " INDEXED BY \($0)" } ?? "" : ""
            if let term = index?.term { all.insert(term, at: 0) }
            sql = "SELECT \(columns) FROM messages\(hint)" + (all.isEmpty ? "" : " WHERE " + all.joined(separator: " AND "))
        }
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
        let (terms, binder, index) = whereTerms(q)
        let from: String
        if index == .both && q.ids == nil {
            from = "(" + Index.both.arms.map { arm in
                "SELECT 1 FROM messages INDEXED BY \(arm.name) WHERE " + ([arm.term] + terms).joined(separator: " AND ")
            }.joined(separator: " UNION ALL ") + ")"
        } else {
            let all = (index?.term).map { [$0] + terms } ?? terms
            from = "messages" + (all.isEmpty ? "" : " WHERE " + all.joined(separator: " AND "))
        }
        if let limit = q.limit {
            return ("SELECT count(*) FROM (SELECT 1 FROM \(from) LIMIT ?20)", { s in
                binder(s)
                s.bind(20, Int64(limit))
            })
        }
        return ("SELECT count(*) FROM \(from)", binder)
    }

    /// The partial index a query's statuses keep to.
    enum Index: Equatable {
        /// `messages_open`: queued, failed, sending.
        case open
        /// `messages_parked`: dead, held.
        case parked
        /// Some of each: the two, merged.
        case both

        var name: String? {
            switch self {
            case .open: "messages_open"
            case .parked: "messages_parked"
            case .both: nil
            }
        }

        /// The index's own terms, as its WHERE has them: SQLite uses a partial index
        /// only for a query that says so in those words.
        var term: String? {
            switch self {
            case .open: "open IS NOT NULL"
            case .parked: "open IS NULL AND status IN ('dead', 'held')"
            case .both: nil
            }
        }

        /// The indexes of ``both``, each with its terms.
        var arms: [(name: String, term: String)] {
            [("messages_open", "open IS NOT NULL"), ("messages_parked", "open IS NULL AND status IN ('dead', 'held')")]
        }

        /// The index for `statuses`, if they keep to one or both.
        static func of(_ statuses: Set<Status>) -> Index? {
            if statuses.isEmpty { return nil }
            let open = statuses.filter(StoredColumns.isOpen)
            let parked = statuses.filter { $0 == .dead || $0 == .held }
            if open.count == statuses.count { return .open }
            if parked.count == statuses.count { return .parked }
            return open.count + parked.count == statuses.count ? .both : nil
        }
    }

    /// The terms of `q` (without the index's own) and their binder; the partial
    /// index whose records they keep to.
    private static func whereTerms(_ q: Query) -> ([String], Binder, Index?) {
        var terms: [String] = []
        var index: Index?
        if let statuses = q.statuses {
            index = Index.of(statuses)
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
        }, index)
    }

    /// A JSON array of strings, for `json_each`.
    static func jsonArray(_ values: [String]) -> String {
        var w = JSONWriter()
        w.value(.array(values.map { .string($0) }))
        return String(decoding: w.bytes, as: UTF8.self)
    }
}
