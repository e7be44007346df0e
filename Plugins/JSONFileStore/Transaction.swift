import MsgKit

/// The changes of one store call, kept beside the records rather than in them
/// until they are durable, in the order they were made: the store turns them into
/// lines (``CommitLines``) with what each means for the ledger.
struct Transaction {
    /// One change, with what it replaced.
    enum Op {
        /// A record stored; `old` is the record it replaced (nil: stored anew).
        case record(EncodedMessage, old: Message?)
        /// A record deleted; `old` is the record it was.
        case deleted(Message)
        /// A destination's state set (nil: removed).
        case destination(String, String?)
    }

    private let base: [String: Message]
    /// The records changed (nil: deleted), by id.
    private(set) var overlay: [String: Message?] = [:]
    /// The destination states changed (nil: removed), by key.
    private(set) var destinations: [String: String?] = [:]
    /// Every change, in order.
    private(set) var ops: [Op] = []

    init(base: [String: Message]) { self.base = base }

    /// How many records there were before this transaction.
    var baseCount: Int { base.count }

    /// The record with `id` as this transaction sees it.
    func get(_ id: String) -> Message? {
        if let changed = overlay[id] { return changed }
        return base[id]
    }

    /// Stores an encoded record, over the one with its id if there is one.
    mutating func set(_ r: EncodedMessage) {
        let id = r.id
        ops.append(.record(r, old: get(id)))
        overlay[id] = .some(r.message)
    }

    /// Sets or removes the state of destination `key`.
    mutating func setDestination(_ key: String, _ state: String?) {
        destinations[key] = .some(state)
        ops.append(.destination(key, state))
    }

    /// Deletes `id`, which this transaction sees stored.
    mutating func delete(_ id: String) {
        guard let old = get(id) else { return }
        ops.append(.deleted(old))
        overlay[id] = .some(nil)
    }
}
