import MsgKit

/// Short ids: what a table shows of an id, and what a command accepts in its place.
///
/// A UUIDv7 starts with its time, so ids made together share their first 11 to 17
/// characters; their last 12 are random. A table shows the last characters, as
/// many as make them unique in the store (at least ``minimumLength``), and every
/// command takes any unique part of an id from its start or its end, as git takes
/// a unique prefix of a hash.
public enum ShortID {
    /// The fewest characters a table shows (32 random bits).
    public static let minimumLength = 8
    /// The fewest characters a command takes for an id.
    public static let minimumInput = 4

    /// Whether `text` may be a part of an id: 4 to 35 lower-case hex digits and dashes.
    public static func isCandidate(_ text: String) -> Bool {
        let n = text.utf8.count
        return n >= minimumInput && n < 36 && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) || $0 == 0x2D }
    }

    /// The one stored id that starts or ends with `part`; a whole id is itself.
    /// - Throws: `notFound` when none does, `usage` when several do (naming some).
    public static func resolve(_ part: String, in store: any Store) throws(MsgError) -> String {
        if UUIDText.isCanonical(part) { return part }
        var found: [String] = []
        try eachID(in: store) { (id) -> Bool in
            if id.hasSuffix(part) || id.hasPrefix(part) { found.append(id) }
            return found.count < 4
        }
        guard let first = found.first else { throw MsgError(.notFound, "no message id starts or ends with '\(part)'") }
        guard found.count == 1 else {
            let shown = found.prefix(3).joined(separator: ", ")
            throw MsgError(.usage, "'\(part)' is ambiguous: it is part of \(found.count > 3 ? "more than 3" : String(found.count)) ids (\(shown)\(found.count > 3 ? ", …" : "")); give more characters")
        }
        return first
    }

    /// Each id given, a part of one resolved to the id (in the order given).
    /// - Throws: as ``resolve(_:in:)``.
    public static func resolve(_ parts: [String], in store: any Store) throws(MsgError) -> [String] {
        guard parts.contains(where: { !UUIDText.isCanonical($0) }) else { return parts }
        var ids: [String] = []
        for part in parts { ids.append(try resolve(part, in: store)) }
        return ids
    }

    /// How many last characters of an id make every id of the store unique: the
    /// longest ending two ids share, plus one, and at least ``minimumLength``.
    /// - Throws: store errors.
    public static func length(in store: any Store) throws(MsgError) -> Int {
        try measure(store).idLength
    }

    /// What a table of the store needs to know before its first row: the short
    /// ids' length (``length(in:)``) and the widest recipient, in display cells,
    /// read by position from the stored text (`to` follows `id`), in one pass.
    /// - Throws: store errors.
    public static func measure(_ store: any Store) throws(MsgError) -> (idLength: Int, recipientWidth: Int) {
        var tails: [String] = []
        var widest = 0
        try store.listJSON(Query(), includeHistory: false) { (json) throws(MsgError) -> Bool in
            if let id = RecordLayout.id(in: json) {
                tails.append(String(id.reversed()))
                widest = max(widest, recipientWidth(json))
            } else if let m = try? Message(decoding: json, origin: .stored) {
                tails.append(String(m.id.reversed()))
                widest = max(widest, TextTable.displayWidth(m.to))
            }
            return true
        }
        return (length(ofReversed: &tails), widest)
    }

    private static let toKey = Array(#","to":""#.utf8)

    /// The display width of the recipient of text msg wrote (`"to":"` right after
    /// the id), 0 when it is not there; an escape counts as the characters written.
    static func recipientWidth(_ json: UnsafeBufferPointer<UInt8>) -> Int {
        // `{"id":"` (7), the id (36), its closing quote: the key follows at 44.
        let start = 44 + toKey.count
        guard json.count > start, UnsafeBufferPointer(rebasing: json[44..<start]).elementsEqual(toKey) else { return 0 }
        var i = start
        while i < json.count, json[i] != UInt8(ascii: "\"") {
            i += json[i] == UInt8(ascii: "\\") ? 2 : 1
        }
        return TextTable.displayWidth(String(decoding: UnsafeBufferPointer(rebasing: json[start..<min(i, json.count)]), as: UTF8.self))
    }

    /// ``length(in:)`` for ids given reversed (sorted here in place).
    static func length(ofReversed tails: inout [String]) -> Int {
        tails.sort()
        var longest = 0
        for i in tails.indices.dropFirst() {
            let shared = zip(tails[i - 1].utf8, tails[i].utf8).prefix { $0 == $1 }.count
            longest = max(longest, shared)
        }
        return min(36, max(minimumLength, longest + 1))
    }

    /// The last `length` characters of `id`.
    public static func of(_ id: String, length: Int) -> String {
        String(id.suffix(length))
    }

    /// Every stored id, read by position where the record allows.
    private static func eachID(in store: any Store, _ body: (String) -> Bool) throws(MsgError) {
        try store.listJSON(Query(), includeHistory: false) { (json) throws(MsgError) -> Bool in
            if let id = RecordLayout.id(in: json) { return body(id) }
            guard let m = try? Message(decoding: json, origin: .stored) else { return true }
            return body(m.id)
        }
    }
}
