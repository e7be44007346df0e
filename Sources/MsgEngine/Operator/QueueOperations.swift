import MsgKit

/// The `queue` commands that change or inspect stored messages by id.
///
/// Each bulk operation is one store commit. An id that names nothing, or a
/// message whose status does not allow the change, is reported on stderr as
/// `msg: ID: …` (the id once) and skipped; the others go through (exit 65 at the
/// end). Messages a filter chose (`skipsQuietly`) whose status does not allow the
/// change are only counted, by status: the filter asked for what can change.
public struct QueueOperations {
    private let store: any Store
    private let now: Timestamp
    private let reporter: Reporter
    /// Only say what would change: the changes are worked out, none is stored.
    private let dryRun: Bool
    /// Count, not report, messages whose status does not allow the change.
    private let skipsQuietly: Bool

    /// Operations on `store` at time `now`; problems with single ids go to `reporter`.
    public init(store: any Store, now: Timestamp = .now(), reporter: Reporter, dryRun: Bool = false, skipsQuietly: Bool = false) {
        self.store = store
        self.now = now
        self.reporter = reporter
        self.dryRun = dryRun
        self.skipsQuietly = skipsQuietly
    }

    /// The outcome of a bulk change.
    public struct Outcome: Sendable {
        /// The changed records, in FIFO order.
        public var changed: [Message] = []
        /// Ids reported as problems.
        public var problems = 0
        /// Messages a filter chose that could not change, by their status.
        public var skipped: [Status: Int] = [:]
        public var exitCode: Int32 { problems > 0 ? 65 : 0 }
    }

    /// One message with its history. - Throws: `notFound`, store errors.
    public func show(_ id: String) throws(MsgError) -> Message {
        guard let r = try store.get(id) else { throw MsgError(.notFound, "no message with id \(id)") }
        return r.message
    }

    /// Holds queued and failed messages back (`held`, event `held`); a failed one's
    /// event says so (`"from":"failed"`), and its due time stays, so release gives
    /// it back as it was. One already held is left alone without complaint.
    /// `reason`, when given, is kept in the event (`"reason"`). - Throws: store errors.
    public func hold(_ ids: [String], reason: String? = nil) throws(MsgError) -> Outcome {
        if let reason, reason.utf8.count > 1024 { throw MsgError(.usage, "--reason is \(reason.utf8.count) bytes; at most 1024") }
        return try change(ids) { (m) throws(MsgError) -> Message? in
            if m.status == .held { return nil }
            guard m.status == .queued || m.status == .failed else {
                throw MsgError(.invalidTransition, "it is \(m.status.rawValue); only queued or failed messages can be held")
            }
            var x = m
            try x.transition(to: .held, event: "held", at: now)
            if m.status == .failed { x.history[x.history.count - 1].extra.append(.init("from", .string("failed"))) }
            if let reason { x.history[x.history.count - 1].extra.append(.init("reason", .string(reason))) }
            x.lease = nil
            return x
        }
    }

    /// Lets held messages go, each back to what it was when held (`queued`, or
    /// `failed` with its due time), event `released`. One queued or failed is left
    /// alone without complaint. - Throws: store errors.
    public func release(_ ids: [String], reason: String? = nil) throws(MsgError) -> Outcome {
        if let reason, reason.utf8.count > 1024 { throw MsgError(.usage, "--reason is \(reason.utf8.count) bytes; at most 1024") }
        return try change(ids) { (m) throws(MsgError) -> Message? in
            if m.status == .queued || m.status == .failed { return nil }
            guard m.status == .held else { throw MsgError(.invalidTransition, "it is \(m.status.rawValue); only held messages can be released") }
            let held = m.history.last { $0.event == "held" }
            let wasFailed = held?.extra.contains { $0.key == "from" && $0.value == .string("failed") } ?? false
            var x = m
            try x.transition(to: wasFailed ? .failed : .queued, event: "released", at: now)
            if let reason { x.history[x.history.count - 1].extra.append(.init("reason", .string(reason))) }
            return x
        }
    }

    /// Applies delivery receipts: `delivered` or `read`. A receipt applies to a message
    /// that was sent, forward only: `sent` → `delivered` → `read` (skipping is fine).
    /// One already in `status` is left alone without complaint (receipts may arrive
    /// twice); a message that was never sent, or is past `status`, is refused.
    /// - Throws: store errors.
    public func mark(_ ids: [String], as status: Status) throws(MsgError) -> Outcome {
        try change(ids) { (m) throws(MsgError) -> Message? in
            guard [.sent, .delivered, .read].contains(m.status) else {
                throw MsgError(.invalidTransition, "it is \(m.status.rawValue), not sent: a \(status.rawValue) receipt applies only to a message that was sent")
            }
            if m.status == status { return nil }
            var x = m
            try x.transition(to: status, event: status.rawValue, at: now)
            return x
        }
    }

    /// Changes `to`, `body` and headers of queued, held or failed messages.
    /// - Throws: store errors.
    public func edit(_ ids: [String], to: String?, body: String?, headers: Headers, removeHeaders: [String]) throws(MsgError) -> Outcome {
        try change(ids) { (m) throws(MsgError) -> Message? in
            guard [.queued, .held, .failed].contains(m.status) else {
                throw MsgError(.invalidTransition, "it is \(m.status.rawValue); only queued, held or failed messages can be edited")
            }
            var x = m
            if let to { x.to = to }
            if let body { x.body = body }
            x.headers.remove(removeHeaders)
            x.headers.merge(headers)
            x.updatedAt = now
            x.history.append(.init(at: now, event: "edited", status: x.status))
            let size = EncodedMessage(x).json.count
            if size > RecordLimits.maxRecordBytes { throw RecordLimits.tooLarge(size) }
            return x
        }
    }

    /// Deletes messages; one in `sending` is refused (it may be on the wire).
    /// - Throws: store errors.
    public func remove(_ ids: [String]) throws(MsgError) -> Outcome {
        var outcome = Outcome()
        let removable = Set(Status.allCases).subtracting([.sending])
        let found = try existing(ids, &outcome)
        let results = dryRun ? found.map { removable.contains($0.status) }
                             : try store.remove(found.map { Removal(id: $0.id, statuses: removable) })
        for (m, ok) in zip(found, results) {
            if ok {
                outcome.changed.append(m)
            } else if skipsQuietly {
                outcome.skipped[.sending, default: 0] += 1
            } else {
                reporter.say("\(m.id): it is being sent; run msg recover if its sender died")
                outcome.problems += 1
            }
        }
        return outcome
    }

    /// Deletes messages in `statuses` last updated before `olderThan` ago.
    /// - Throws: `usage` for a status that may not be purged; store errors.
    public func purge(statuses: Set<Status>, olderThan: MsgDuration) throws(MsgError) -> Int {
        var ids: [String] = []
        try store.list(try purgeQuery(statuses: statuses, olderThan: olderThan)) { (r) throws(MsgError) -> Bool in
            ids.append(r.message.id)
            return true
        }
        var removed = 0
        var start = 0
        while start < ids.count {
            let chunk = ids[start..<min(ids.count, start + 10_000)]
            removed += try store.remove(chunk.map { Removal(id: $0, statuses: statuses) }).filter { $0 }.count
            start += chunk.count
        }
        return removed
    }

    /// What `purge` removes: messages in `statuses` last updated before `olderThan` ago.
    /// - Throws: `usage` for a status that may not be purged.
    public func purgeQuery(statuses: Set<Status>, olderThan: MsgDuration) throws(MsgError) -> Query {
        let allowed: Set<Status> = [.sent, .delivered, .read, .dead]
        guard statuses.isSubset(of: allowed) else {
            throw MsgError(.usage, "purge removes only sent, delivered, read or dead messages, not \(statuses.subtracting(allowed).map(\.rawValue).sorted().joined(separator: ", "))")
        }
        return Query(statuses: statuses, updatedBy: Timestamp(milliseconds: now.milliseconds - olderThan.milliseconds))
    }

    /// Counts per status and age (time since created) buckets, as Postfix's qshape:
    /// from the store's counts when it keeps them by creation time
    /// (``JournalStore/created(after:)``), else from every record.
    public func stats() throws(MsgError) -> [(status: Status, buckets: [Int])] {
        if let counted = try countedStats() { return counted }
        var table: [Status: [Int]] = [:]
        try store.list(Query()) { (r) throws(MsgError) -> Bool in
            let m = r.message
            let age = now.milliseconds - m.createdAt.milliseconds
            let bucket = Self.ageBuckets.firstIndex { age < $0.limit.milliseconds } ?? Self.ageBuckets.count
            table[m.status, default: [Int](repeating: 0, count: Self.ageBuckets.count + 1)][bucket] += 1
            return true
        }
        return Status.allCases.compactMap { s in table[s].map { (s, $0) } }
    }

    /// ``stats()`` from the store's counts (``JournalStore/created(after:)``): per status, the
    /// records created after each bucket's edge (an age under a bucket's limit is a
    /// creation after `now` minus it) and its total; nil when the store keeps none.
    private func countedStats() throws(MsgError) -> [(status: Status, buckets: [Int])]? {
        guard let store = store.capabilities.journal else { return nil }
        let edges = Self.ageBuckets.map { Timestamp(milliseconds: now.milliseconds - $0.limit.milliseconds) }
        guard let after = try store.created(after: edges) else { return nil }
        var rows: [(status: Status, buckets: [Int])] = []
        for status in Status.allCases {
            guard let figures = after[status.rawValue], figures.count == edges.count + 1, figures.contains(where: { $0 != 0 }) else { continue }
            // Each bucket is what was created after its edge and not after the one
            // before; "older" is the rest.
            var buckets: [Int] = []
            var before = 0
            for n in figures {
                buckets.append(n - before)
                before = n
            }
            rows.append((status, buckets))
        }
        return rows
    }

    /// Counts per destination (by `key`), status and age bucket, as qshape per domain:
    /// destinations with the most messages first.
    public func stats(by key: DestinationKey) throws(MsgError) -> [(destination: String, status: Status, buckets: [Int])] {
        var table: [String: [Status: [Int]]] = [:]
        try store.list(Query()) { (r) throws(MsgError) -> Bool in
            let m = r.message
            let age = now.milliseconds - m.createdAt.milliseconds
            let bucket = Self.ageBuckets.firstIndex { age < $0.limit.milliseconds } ?? Self.ageBuckets.count
            table[key.of(m), default: [:]][m.status, default: [Int](repeating: 0, count: Self.ageBuckets.count + 1)][bucket] += 1
            return true
        }
        var totals: [(key: String, total: Int)] = []
        for (k, byStatus) in table {
            var n = 0
            for counts in byStatus.values { n += counts.reduce(0, +) }
            totals.append((k, n))
        }
        totals.sort { (a, b) -> Bool in a.total != b.total ? a.total > b.total : a.key < b.key }
        var rows: [(destination: String, status: Status, buckets: [Int])] = []
        for (k, _) in totals {
            for s in Status.allCases {
                if let counts = table[k]?[s] { rows.append((k, s, counts)) }
            }
        }
        return rows
    }

    /// The age buckets of ``stats()``: under 5m, 1h, 1d, 7d, then older.
    public static let ageBuckets: [(name: String, limit: MsgDuration)] = [
        ("5m", MsgDuration(milliseconds: 300_000)), ("1h", .seconds(3600)), ("1d", .seconds(86_400)), ("7d", .seconds(604_800)),
    ]

    private func existing(_ ids: [String], _ outcome: inout Outcome) throws(MsgError) -> [Message] {
        var found: [Message] = []
        for id in ids {
            if let r = try store.get(id) {
                found.append(r.message)
            } else {
                reporter.say("\(id): no such message")
                outcome.problems += 1
            }
        }
        return found
    }

    private func change(_ ids: [String], _ transform: (Message) throws(MsgError) -> Message?) throws(MsgError) -> Outcome {
        var outcome = Outcome()
        let found = try existing(ids, &outcome)
        var problems: [String: MsgError] = [:]
        var skipped: [Status: Int] = [:]
        func apply(_ m: Message) throws(MsgError) -> Message? {
            do throws(MsgError) {
                if m.isDamaged {
                    throw MsgError(.invalidTransition, "it is a damaged record (msg-record(5)): fix the text in its \(Message.damagedRecordKey) field and add it again, or remove it")
                }
                return try transform(m)
            } catch {
                // A status the change does not allow, among what a filter chose: counted.
                if skipsQuietly && !m.isDamaged && error.code == .invalidTransition {
                    skipped[m.status, default: 0] += 1
                } else {
                    problems[m.id] = error
                }
                return nil
            }
        }
        let changed: [Message]
        if dryRun {
            var would: [Message] = []
            for m in found { if let x = try apply(m) { would.append(x) } }
            changed = would
        } else {
            changed = try store.claim(Query(ids: Set(found.map(\.id))), limit: found.count) { (m) throws(MsgError) -> Message? in try apply(m) }.map(\.message)
        }
        for (id, error) in problems.sorted(by: { $0.key < $1.key }) {
            reporter.say("\(id): \(error.message)")
        }
        outcome.problems += problems.count
        outcome.skipped = skipped
        outcome.changed = changed
        return outcome
    }
}
