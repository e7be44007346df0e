import MsgKit

/// Reads the messages a command should act on from standard input: each line a
/// record, an object with `"id"`, a JSON string, or a bare id (docs/DESIGN.md 5).
public struct TargetReader {
    /// What was read.
    public struct Targets: Sendable {
        /// The ids, in input order, each once.
        public var ids: [String] = []
        /// Bad lines reported on stderr.
        public var badLines = 0
    }

    /// Reads all of `reader`; bad lines are reported to `reporter` as `line N: …`.
    /// - Throws: `badInput` when standard input cannot be read.
    public static func read(_ reader: inout NDJSONReader, reporter: Reporter) throws(MsgError) -> Targets {
        var targets = Targets()
        var seen: Set<String> = []
        while let lines = try reader.nextBatch() {
            for line in lines {
                switch id(of: line) {
                case .success(let id):
                    if seen.insert(id).inserted { targets.ids.append(id) }
                case .failure(let error):
                    reporter.badLine(line.number, error)
                    targets.badLines += 1
                }
            }
        }
        return targets
    }

    /// The id a line names.
    static func id(of line: NDJSONReader.Line) -> Result<String, MsgError> {
        guard case .success(let bytes) = line.bytes else {
            if case .failure(let e) = line.bytes { return .failure(e) }
            return .failure(MsgError(.badInput, "unreadable line"))
        }
        let first = bytes.first { $0 != 0x20 && $0 != 0x09 }
        let text: String
        if first == UInt8(ascii: "{") || first == UInt8(ascii: "\"") {
            switch line.json() {
            case .failure(let e): return .failure(e)
            case .success(let value):
                if case .string(let s) = value {
                    text = s
                } else if case .string(let s)? = value["id"] {
                    text = s
                } else {
                    return .failure(MsgError(.badInput, "expected a record or an object with \"id\""))
                }
            }
        } else {
            guard let t = line.text else { return .failure(MsgError(.badInput, "invalid UTF-8")) }
            text = t.trimmingSpaces()
        }
        guard UUIDText.isCanonical(text) else {
            return .failure(MsgError(.badInput, "'\(text.prefix(60))' is not a message id (a lower-case UUID)"))
        }
        return .success(text)
    }
}
