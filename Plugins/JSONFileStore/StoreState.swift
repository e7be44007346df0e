import MsgKit

/// The queue as rebuilt from the file's lines, and how far the file was read.
struct StoreState {
    var records: [String: Message] = [:]
    /// Destination states by key (`{"$destination":KEY,"state":TEXT}` lines; a null
    /// state removes one).
    var destinations: [String: String] = [:]
    /// Bytes of the file consumed (always at a line boundary).
    var offset = 0
    /// Lines in the file, live or dead (for the compaction rule).
    var lines = 0

    /// Every record in FIFO order, sorted once after each change and kept.
    mutating func fifo() -> [Message] {
        if let sorted { return sorted }
        let all = records.values.sorted(by: Query.fifo)
        sorted = all
        return all
    }

    /// The records in FIFO order as of the last ``fifo()``; nil after a change.
    private var sorted: [Message]?

    /// Records matching `query` in FIFO order (its limit not applied).
    mutating func sorted(matching query: Query) -> [Message] {
        fifo().filter(query.matches)
    }

    /// A complete line that is not a record: its number in the file and why.
    struct Damage: Error {
        let line: Int
        let reason: String
    }

    /// Applies the complete lines of `bytes`, read at ``offset``.
    /// - Returns: how many bytes were consumed (a last line without newline is not).
    /// - Throws: ``Damage`` for a complete line that is not a record.
    mutating func apply(_ bytes: [UInt8]) throws(Damage) -> Int {
        var start = 0
        try bytes.withUnsafeBufferPointer { (all) throws(Damage) in
            while let newline = all[start...].firstIndex(of: 0x0A) {
                lines += 1
                do throws(MsgError) {
                    try applyLine(UnsafeBufferPointer(rebasing: all[start..<newline]))
                } catch {
                    throw Damage(line: lines, reason: error.message)
                }
                start = newline + 1
            }
        }
        offset += start
        return start
    }

    /// Applies a whole record line that lacks its newline, without moving ``offset``
    /// past it: the next read sees it again, with whatever follows by then.
    mutating func applyUnterminated(_ line: [UInt8]) throws(MsgError) {
        try line.withUnsafeBufferPointer { (b) throws(MsgError) in try applyLine(b) }
    }

    /// What one line holds: a record, or the id of a deletion.
    enum Line {
        case record(Message)
        case deleted(String)
        case destination(String, String?)
    }

    /// Reads one line (without its newline). - Throws: `corrupt` when it is neither.
    static func parse(_ line: [UInt8]) throws(MsgError) -> Line {
        try line.withUnsafeBufferPointer { (b) throws(MsgError) in try read(b) }
    }

    private static func read(_ line: UnsafeBufferPointer<UInt8>) throws(MsgError) -> Line {
        let value: JSONValue
        do throws(JSONParser.Failure) { value = try JSONParser.parse(line) } catch { throw MsgError(.corrupt, "invalid JSON: \(error)") }
        if let deleted = value["$deleted"]?.stringValue { return .deleted(deleted) }
        if let key = value["$destination"]?.stringValue { return .destination(key, value["state"]?.stringValue) }
        do throws(MsgError) {
            return .record(try Message(json: value))
        } catch {
            // A line that is JSON with an id but not a record (edited by hand) is one
            // damaged record, not a damaged file (Store, requirement 10).
            guard let id = value["id"]?.stringValue, UUIDText.isCanonical(id) else { throw MsgError(.corrupt, error.message) }
            let createdAt = value["created_at"]?.stringValue.flatMap(Timestamp.init(rfc3339:)) ?? Timestamp.now()
            return .record(EncodedMessage.damaged(id: id, to: value["to"]?.stringValue, createdAt: createdAt, text: Array(line),
                                                  error: MsgError(.corrupt, error.message), now: Timestamp.now()).message)
        }
    }

    /// Forgets the FIFO order after records changed.
    mutating func changed() { sorted = nil }

    private mutating func applyLine(_ line: UnsafeBufferPointer<UInt8>) throws(MsgError) {
        sorted = nil
        switch try Self.read(line) {
        case .deleted(let id): records[id] = nil
        case .destination(let key, let state): destinations[key] = state
        case .record(let m): records[m.id] = m
        }
    }
}
