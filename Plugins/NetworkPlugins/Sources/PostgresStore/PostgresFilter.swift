import MsgKit
import PostgresNIO

/// A ``Query``'s filters as an SQL `WHERE` clause with its bindings, in the
/// order the statements built on it need (FIFO: `created_at`, then `id`).
struct PostgresFilter {
    private(set) var terms: [String] = []
    private(set) var binds = PostgresBindings()

    init(_ q: Query) {
        if let statuses = q.statuses {
            if statuses.count == 1 { add("status = $", statuses.first!.rawValue) } else { add("status = ANY($)", statuses.map(\.rawValue).sorted()) }
        }
        if let to = q.to { add("recipient = $", to) }
        if let since = q.since { add("created_at >= $", since.milliseconds) }
        if let until = q.until { add("created_at < $", until.milliseconds) }
        if let due = q.dueBy { add("(due_at IS NULL OR due_at <= $)", due.milliseconds) }
        if let lease = q.leaseEndedBy { add("(lease_until IS NULL OR lease_until < $)", lease.milliseconds) }
        if let updated = q.updatedBy { add("updated_at <= $", updated.milliseconds) }
        if let ids = q.ids { add("id = ANY($)", ids.sorted()) }
    }

    /// Adds `term`, its `$` numbered for `value`.
    mutating func add<V: PostgresDynamicTypeEncodable>(_ term: String, _ value: V) {
        binds.append(value)
        terms.append(term.split(separator: "$", omittingEmptySubsequences: false).joined(separator: "$\(binds.count)"))
    }

    /// Keeps only rows after (`created_at`, `id`) in FIFO order: the next page. It
    /// replaces the position set before: a listing of a million in pages of 1,000
    /// once sent its thousandth page with a thousand such terms (`queue stats` of a
    /// million did not end in five minutes).
    mutating func after(createdAt: Int64, id: String) {
        position = (createdAt, id)
    }

    /// Where ``after(createdAt:id:)`` last put the page's start.
    private var position: (createdAt: Int64, id: String)?

    /// The terms and their bindings, the position last.
    private func whole() -> (clause: String, binds: PostgresBindings) {
        var b = binds
        var t = terms
        if let position {
            b.append(position.createdAt)
            b.append(position.id)
            t.append("(created_at, id) > ($\(b.count - 1), $\(b.count))")
        }
        return (t.isEmpty ? "" : " WHERE " + t.joined(separator: " AND "), b)
    }

    /// `SELECT columns … ORDER BY created_at, id LIMIT n`, with `suffix` (`FOR UPDATE SKIP LOCKED`).
    func select(_ columns: String, from table: String, limit: Int?, suffix: String = "") -> PostgresQuery {
        let (clause, bound) = whole()
        var b = bound
        var sql = "SELECT \(columns) FROM \(table)\(clause) ORDER BY created_at, id"
        if let limit {
            b.append(Int64(limit))
            sql += " LIMIT $\(b.count)"
        }
        return PostgresQuery(unsafeSQL: sql + suffix, binds: b)
    }

    /// The number of matching rows, at most `limit`.
    func count(from table: String, limit: Int?) -> PostgresQuery {
        let (clause, bound) = whole()
        guard let limit else { return PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)\(clause)", binds: bound) }
        var b = bound
        b.append(Int64(limit))
        return PostgresQuery(unsafeSQL: "SELECT count(*) FROM (SELECT 1 FROM \(table)\(clause) LIMIT $\(b.count)) AS t", binds: b)
    }
}
