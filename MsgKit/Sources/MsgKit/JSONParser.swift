/// A strict JSON parser over UTF-8 bytes (RFC 8259).
///
/// It validates UTF-8 as it goes, so a bad byte is reported as
/// "invalid UTF-8 at column N" rather than as a vague syntax error, and it refuses
/// nesting deeper than ``maxDepth`` instead of overflowing the stack.
public struct JSONParser {
    /// The deepest nesting of arrays and objects accepted.
    public static let maxDepth = 512

    /// Why a text is not valid JSON.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// What is wrong, e.g. "expected ':' after an object key".
        public let reason: String
        /// The 1-based byte column where it went wrong.
        public let column: Int
        public var description: String { "\(reason) at column \(column)" }
    }

    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    private var depth = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// Parses exactly one JSON value from `bytes` (surrounding whitespace allowed).
    /// - Throws: ``Failure`` naming the problem and its column.
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(Failure) -> JSONValue {
        var parser = JSONParser(bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue()
        parser.skipWhitespace()
        if parser.index < bytes.count { throw parser.fail("unexpected text after the JSON value") }
        return value
    }

    /// Parses exactly one JSON value from `bytes`. - Throws: ``Failure``.
    public static func parse(_ bytes: [UInt8]) throws(Failure) -> JSONValue {
        try bytes.withUnsafeBufferPointer { (buffer) throws(Failure) in try parse(buffer) }
    }

    /// Parses exactly one JSON value from `text`. - Throws: ``Failure``.
    public static func parse(_ text: String) throws(Failure) -> JSONValue {
        try parse(Array(text.utf8))
    }

    private func fail(_ reason: String, at position: Int? = nil) -> Failure {
        Failure(reason: reason, column: (position ?? index) + 1)
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws(Failure) -> JSONValue {
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectWord("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectWord("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectWord("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        case let byte where byte >= 0x80:
            throw fail(Self.isValidUTF8Start(bytes, index) ? "unexpected character" : "invalid UTF-8")
        default: throw fail("unexpected character '\(Self.printable(bytes[index]))'")
        }
    }

    private static func printable(_ byte: UInt8) -> String {
        (0x20..<0x7F).contains(byte) ? String(UnicodeScalar(byte)) : "\\u{\(String(byte, radix: 16))}"
    }

    private mutating func expectWord(_ word: StaticString) throws(Failure) {
        let start = index
        for expected in UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount) {
            guard index < bytes.count, bytes[index] == expected else { throw fail("invalid literal", at: start) }
            index += 1
        }
    }

    mutating func enter() throws(Failure) {
        depth += 1
        if depth > Self.maxDepth { throw fail("nesting deeper than \(Self.maxDepth) levels") }
    }

    mutating func leave() { depth -= 1 }

    private mutating func parseObject() throws(Failure) -> JSONValue {
        try enter()
        index += 1
        var members: [JSONValue.Member] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input in an object") }
            guard bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a string key in an object") }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':' after an object key") }
            index += 1
            skipWhitespace()
            let value = try parseValue()
            members.append(.init(key, value))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input in an object") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; break }
            throw fail("expected ',' or '}' in an object")
        }
        depth -= 1
        return .object(members)
    }

    private mutating func parseArray() throws(Failure) -> JSONValue {
        try enter()
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input in an array") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; break }
            throw fail("expected ',' or ']' in an array")
        }
        depth -= 1
        return .array(elements)
    }

    private mutating func parseNumber() throws(Failure) -> JSONValue {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number", at: start) }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number", at: start) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number", at: start) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        return .number(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    mutating func parseString() throws(Failure) -> String {
        index += 1
        let start = index
        // Fast path: no escapes up to the closing quote, ASCII or valid UTF-8 (checked
        // at once by the standard library, not a sequence at a time: a body in any
        // language but English took the slow path before).
        var plain = true
        var scan = Self.skipPlainASCII(bytes, from: index)
        var firstHigh: Int?
        while scan < bytes.count {
            let byte = bytes[scan]
            if byte == UInt8(ascii: "\"") { break }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { plain = false; break }
            if byte >= 0x80 && firstHigh == nil { firstHigh = scan }
            scan += 1
        }
        if plain, scan < bytes.count {
            let run = UnsafeBufferPointer(rebasing: bytes[start..<scan])
            if firstHigh == nil {
                index = scan + 1
                return String(decoding: run, as: UTF8.self)
            }
            if let valid = String(validating: run, as: UTF8.self) {
                index = scan + 1
                return valid
            }
        }
        // Escapes, invalid UTF-8 or no end: the slow path, from the first byte that is
        // not plain ASCII, says which and where.
        if let firstHigh { scan = firstHigh }
        var out: [UInt8] = []
        out.reserveCapacity(scan - start + 16)
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<scan]))
        index = scan
        while true {
            guard index < bytes.count else { throw fail("unterminated string", at: start - 1) }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try parseEscape(into: &out)
            case 0..<0x20:
                throw fail("control character in a string (must be escaped)")
            case 0x80...:
                let length = Self.utf8SequenceLength(bytes, index)
                guard length > 0 else { throw fail("invalid UTF-8") }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[index..<index + length]))
                index += length
            default:
                // A run of plain ASCII at once.
                var end = index + 1
                while end < bytes.count {
                    let b = bytes[end]
                    if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") || b < 0x20 || b >= 0x80 { break }
                    end += 1
                }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[index..<end]))
                index = end
            }
        }
    }

    /// The index of the first 8-byte word from `i` on that holds a quote, a
    /// backslash, a control byte or a byte of a non-ASCII character (or of the last
    /// bytes, fewer than 8): eight bytes tested at a time (bit tricks on a word),
    /// the string's bytes before it need no look each.
    static func skipPlainASCII(_ bytes: UnsafeBufferPointer<UInt8>, from i: Int) -> Int {
        guard let base = bytes.baseAddress else { return i }
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        var j = i
        while j + 8 <= bytes.count {
            let v = UnsafeRawPointer(base + j).loadUnaligned(as: UInt64.self)
            let quote = v ^ (ones &* 0x22), backslash = v ^ (ones &* 0x5C)
            // A zero byte in `quote` or `backslash`, a byte below 0x20, or a high bit.
            let special = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((v &- ones &* 0x20) & ~v) | v
            if special & highs != 0 { return j }
            j += 8
        }
        return j
    }

    private mutating func parseEscape(into out: inout [UInt8]) throws(Failure) {
        let start = index
        index += 1
        guard index < bytes.count else { throw fail("unterminated escape", at: start) }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""): out.append(0x22)
        case UInt8(ascii: "\\"): out.append(0x5C)
        case UInt8(ascii: "/"): out.append(0x2F)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4(start)
            if (0xD800..<0xDC00).contains(scalar) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw fail("unpaired surrogate in \\u escape", at: start)
                }
                index += 2
                let low = try parseHex4(start)
                guard (0xDC00..<0xE000).contains(low) else { throw fail("unpaired surrogate in \\u escape", at: start) }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw fail("unpaired surrogate in \\u escape", at: start)
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape", at: start) }
            out.append(contentsOf: UTF8.encode(unicode)!)
        default:
            throw fail("invalid escape '\\\(Self.printable(byte))'", at: start)
        }
    }

    private mutating func parseHex4(_ start: Int) throws(Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("invalid \\u escape", at: start) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail("invalid \\u escape", at: start)
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private static func isValidUTF8Start(_ bytes: UnsafeBufferPointer<UInt8>, _ i: Int) -> Bool {
        utf8SequenceLength(bytes, i) > 0
    }

    /// The length of the well-formed UTF-8 sequence starting at `i`, or 0 when it is
    /// ill-formed (overlong, surrogate, out of range, truncated).
    static func utf8SequenceLength(_ bytes: UnsafeBufferPointer<UInt8>, _ i: Int) -> Int {
        let b0 = bytes[i]
        func cont(_ k: Int, _ range: ClosedRange<UInt8> = 0x80...0xBF) -> Bool {
            i + k < bytes.count && range.contains(bytes[i + k])
        }
        switch b0 {
        case 0xC2...0xDF: return cont(1) ? 2 : 0
        case 0xE0: return cont(1, 0xA0...0xBF) && cont(2) ? 3 : 0
        case 0xE1...0xEC, 0xEE...0xEF: return cont(1) && cont(2) ? 3 : 0
        case 0xED: return cont(1, 0x80...0x9F) && cont(2) ? 3 : 0
        case 0xF0: return cont(1, 0x90...0xBF) && cont(2) && cont(3) ? 4 : 0
        case 0xF1...0xF3: return cont(1) && cont(2) && cont(3) ? 4 : 0
        case 0xF4: return cont(1, 0x80...0x8F) && cont(2) && cont(3) ? 4 : 0
        default: return 0
        }
    }
}

extension JSONParser {
    /// Parses a user's input line.
    /// - Throws: `badInput` naming the problem and its column (not the line number).
    public static func parseInput(_ bytes: [UInt8]) throws(MsgError) -> JSONValue {
        do throws(JSONParser.Failure) {
            return try parse(bytes)
        } catch {
            throw MsgError(.badInput, error.reason == "invalid UTF-8" ? "\(error)" : "invalid JSON: \(error)")
        }
    }
}
