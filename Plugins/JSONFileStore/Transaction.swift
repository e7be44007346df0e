import MsgKit

/// The changes of one store call, kept beside the records rather than in them
/// until they are durable, and the lines that will make them so.
struct Transaction {
    private let base: [String: Message]
    /// The records changed (nil: deleted), by id.
    private(set) var overlay: [String: Message?] = [:]
    /// The lines to append, one per change, in order.
    private(set) var output = JSONWriter(capacity: 4096)
    private(set) var lineCount = 0
    /// The destination states changed (nil: removed), by key.
    private(set) var destinations: [String: String?] = [:]

    init(base: [String: Message]) { self.base = base }

    /// How many records there were before this transaction.
    var baseCount: Int { base.count }

    /// The record with `id` as this transaction sees it.
    func get(_ id: String) -> Message? {
        if let changed = overlay[id] { return changed }
        return base[id]
    }

    /// Stores `m` (a record line).
    mutating func set(_ m: Message) {
        overlay[m.id] = .some(m)
        m.write(to: &output)
        output.raw("\n")
        lineCount += 1
    }

    /// Stores an already encoded record (a record line).
    mutating func set(_ r: EncodedMessage) {
        overlay[r.message.id] = .some(r.message)
        output.bytes.append(contentsOf: r.json)
        output.raw("\n")
        lineCount += 1
    }

    /// Sets or removes the state of destination `key` (a `$destination` line).
    mutating func setDestination(_ key: String, _ state: String?) {
        destinations[key] = .some(state)
        Self.writeDestination(key, state, to: &output)
        lineCount += 1
    }

    /// Writes a `$destination` line.
    static func writeDestination(_ key: String, _ state: String?, to w: inout JSONWriter) {
        w.raw("{\"$destination\":")
        w.string(key)
        w.raw(",\"state\":")
        if let state { w.string(state) } else { w.raw("null") }
        w.raw("}\n")
    }

    /// Deletes `id` (a `{"$deleted":ID}` line).
    mutating func delete(_ id: String) {
        overlay[id] = .some(nil)
        output.raw("{\"$deleted\":")
        output.string(id)
        output.raw("}\n")
        lineCount += 1
    }
}
