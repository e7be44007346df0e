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
        var tails: [UInt64] = []
        var widest = 0
        try store.listJSON(Query(), includeHistory: false) { (json) throws(MsgError) -> Bool in
            // Text msg wrote starts `{"id":"` and the id: read in place.
            if json.count > 44, json[43] == UInt8(ascii: "\""), let t = tail(json, at: 7) {
                tails.append(t)
                widest = max(widest, recipientWidth(json))
            } else if let m = try? Message(decoding: json, origin: .stored) {
                if let t = tail(m.id) { tails.append(t) }
                widest = max(widest, TextTable.displayWidth(m.to))
            }
            return true
        }
        return (length(ofTails: &tails), widest)
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

    /// ``length(in:)`` for ids given by their last 16 hex digits (``tail(_:)``),
    /// sorted here in place: 8 bytes an id, so a million cost 8 MB. Two tails that
    /// end alike share as many digits as the trailing zero bits of their xor tell;
    /// past the last group's 12 digits the dash counts as a character too.
    static func length(ofTails tails: inout [UInt64]) -> Int {
        tails.sort()
        var longest = 0
        for i in tails.indices.dropFirst() {
            let x = tails[i - 1] ^ tails[i]
            longest = max(longest, x == 0 ? 16 : x.trailingZeroBitCount / 4)
        }
        guard longest < 16 else { return 36 }
        let digits = longest + 1
        return max(minimumLength, digits <= 12 ? digits : digits + 1)
    }

    /// The last 16 hex digits of a canonical id as a number (the last group and the
    /// one before it, the dash left out); nil for any other text.
    static func tail(_ id: String) -> UInt64? {
        var id = id
        return id.withUTF8 { $0.count == 36 ? tail($0, at: 0) : nil }
    }

    /// ``tail(_:)`` of the id that starts at `base` in `u`.
    static func tail(_ u: UnsafeBufferPointer<UInt8>, at base: Int) -> UInt64? {
        guard u.count >= base + 36, u[base + 23] == UInt8(ascii: "-") else { return nil }
        var n: UInt64 = 0
        for i in base + 19..<base + 36 where i != base + 23 {
            guard let d = hexValue(u[i]) else { return nil }
            n = n << 4 | d
        }
        return n
    }

    private static func hexValue(_ c: UInt8) -> UInt64? {
        switch c {
        case 0x30...0x39: UInt64(c - 0x30)
        case 0x61...0x66: UInt64(c - 0x61 + 10)
        default: nil
        }
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
