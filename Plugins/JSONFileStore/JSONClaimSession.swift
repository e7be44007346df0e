import MsgKit

/// One claim under the JSON store's exclusive lock (``ClaimSession``): the
/// changes go into one transaction, appended and synced as one write when the
/// session ends.
final class JSONClaimSession: ClaimSession {
    private(set) var tx: Transaction
    /// The records and states as the session began, the ids in flight then, and the
    /// ids in FIFO order (read once, when first asked for).
    private var records: [String: Message]
    private let destinations: [String: String]
    private let sending: Set<String>
    private let fifo: () -> [String]
    private var ordered: [String]?

    init(_ tx: Transaction, _ state: StoreState, fifo: @escaping () -> [String]) {
        self.tx = tx
        records = state.records
        destinations = state.destinations
        sending = state.sending
        self.fifo = fifo
    }

    /// The transaction, taken when the session ends: the session lets go of the
    /// records, which a planner may hold it past the commit (the commit then changes
    /// them in place instead of copying 100,000 of them).
    func end() -> Transaction {
        defer {
            tx = Transaction(base: [:])
            records = [:]
            ordered = nil
        }
        return tx
    }

    private var ids: [String] {
        if let ordered { return ordered }
        let all = fifo()
        ordered = all
        return all
    }

    func inFlight() throws(MsgError) -> [InFlight]? {
        sending.compactMap { records[$0] }.sorted(by: Query.fifo).map { InFlight(id: $0.id, to: $0.to) }
    }

    func record(_ id: String) throws(MsgError) -> EncodedMessage? {
        tx.get(id).map { EncodedMessage($0) }
    }

    func hasStates() throws(MsgError) -> Bool {
        !destinations.isEmpty || tx.destinations.values.contains { $0 != nil }
    }

    func states(_ keys: Set<String>) throws(MsgError) -> [String: String] {
        var found: [String: String] = [:]
        for key in keys {
            if let changed = tx.destinations[key] {
                if let changed { found[key] = changed }
            } else if let state = destinations[key] {
                found[key] = state
            }
        }
        return found
    }

    func candidates(_ query: Query, after position: ClaimPosition?, skipping: Set<String>, limit: Int) throws(MsgError) -> [ClaimRow] {
        let all = ids
        var start = 0
        if let position {
            // The first record after the position (binary search over FIFO order).
            var high = all.count
            while start < high {
                let mid = (start + high) / 2
                if ClaimPosition(createdAt: records[all[mid]]?.createdAt ?? Timestamp(milliseconds: 0), id: all[mid]) <= position { start = mid + 1 } else { high = mid }
            }
        }
        var rows: [ClaimRow] = []
        var i = start
        while i < all.count && rows.count < limit {
            guard let m = records[all[i]] else { i += 1; continue }
            i += 1
            if !skipping.isEmpty && skipping.contains(m.to) { continue }
            guard query.matches(m) else { continue }
            rows.append(ClaimRow(record: EncodedMessage(m), status: m.status))
        }
        return rows
    }

    func store(_ changes: [Change], states: [String: String?]) throws(MsgError) -> [Bool] {
        let applied = changes.map { change -> Bool in
            guard tx.get(change.record.id)?.status == change.expected else { return false }
            tx.set(change.record)
            return true
        }
        for (key, value) in states { tx.setDestination(key, value) }
        return applied
    }
}
