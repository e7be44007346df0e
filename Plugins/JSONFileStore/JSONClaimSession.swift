import MsgKit

/// One claim under the JSON store's exclusive lock (``ClaimSession``): the
/// changes go into one transaction, appended and synced as one write when the
/// session ends.
final class JSONClaimSession: ClaimSession {
    private(set) var tx: Transaction
    private let destinations: [String: String]
    private let fifo: () -> [Message]
    private var ordered: [Message]?

    init(_ tx: Transaction, destinations: [String: String], fifo: @escaping () -> [Message]) {
        self.tx = tx
        self.destinations = destinations
        self.fifo = fifo
    }

    /// Every record in FIFO order, as the session began.
    private var records: [Message] {
        if let ordered { return ordered }
        let all = fifo()
        ordered = all
        return all
    }

    func inFlight() throws(MsgError) -> [InFlight]? {
        records.filter { $0.status == .sending }.map { InFlight(id: $0.id, to: $0.to) }
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
        let all = records
        var start = 0
        if let position {
            // The first record after the position (binary search over FIFO order).
            var high = all.count
            while start < high {
                let mid = (start + high) / 2
                if ClaimPosition(createdAt: all[mid].createdAt, id: all[mid].id) <= position { start = mid + 1 } else { high = mid }
            }
        }
        var rows: [ClaimRow] = []
        var i = start
        while i < all.count && rows.count < limit {
            let m = all[i]
            i += 1
            if !skipping.isEmpty && skipping.contains(m.to) { continue }
            guard query.matches(m) else { continue }
            rows.append(ClaimRow(record: EncodedMessage(m), status: m.status))
        }
        return rows
    }

    func store(_ changes: [Change], states: [String: String?]) throws(MsgError) -> [Bool] {
        let applied = changes.map { change -> Bool in
            guard tx.get(change.message.id)?.status == change.expected else { return false }
            tx.set(change.record)
            return true
        }
        for (key, value) in states { tx.setDestination(key, value) }
        return applied
    }
}
