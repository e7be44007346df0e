import MsgKit

/// The queue as rebuilt from the file's lines, and how far the file was read.
struct StoreState {
    var records: [String: Message] = [:]
    /// Bytes of the file consumed (always at a line boundary).
    var offset = 0
    /// Lines in the file, live or dead (for the compaction rule).
    var lines = 0

    /// Records matching `query` in FIFO order (its limit not applied).
    func sorted(matching query: Query) -> [Message] {
        records.values.filter(query.matches).sorted(by: Query.fifo)
    }

    /// Applies the complete lines of `bytes`, read at ``offset``.
    /// - Returns: how many bytes were consumed (a last line without newline is not).
    /// - Throws: what `damaged(lineNumber, reason)` throws for a line that is not a record.
    mutating func apply(_ bytes: [UInt8], path: String, damaged: (Int, String) throws(MsgError) -> Never) throws(MsgError) -> Int {
        var start = 0
        var consumed = 0
        try bytes.withUnsafeBufferPointer { (all) throws(MsgError) in
            while let newline = all[start...].firstIndex(of: 0x0A) {
                lines += 1
                let line = UnsafeBufferPointer(rebasing: all[start..<newline])
                do throws(MsgError) {
                    try applyLine(line)
                } catch {
                    try damaged(lines, error.message)
                }
                start = newline + 1
                consumed = start
            }
        }
        offset += consumed
        return consumed
    }

    private mutating func applyLine(_ line: UnsafeBufferPointer<UInt8>) throws(MsgError) {
        let value: JSONValue
        do throws(JSONParser.Failure) { value = try JSONParser.parse(line) } catch { throw MsgError(.corrupt, "invalid JSON: \(error)") }
        if let deleted = value["$deleted"]?.stringValue {
            records[deleted] = nil
            return
        }
        let m = try Message(json: value)
        records[m.id] = m
    }
}
