/// The fast way to read a stored record: from its bytes straight to a ``Message``,
/// without building a ``JSONValue`` tree and searching it by key.
///
/// It reads the shape msg itself writes: each value of its type. Anything else (a null
/// where a value is required, a wrong type, a missing field, a repeated unknown key,
/// invalid JSON) makes it give up and return nil, so the general path (``JSONParser``
/// then ``FieldReader``) decides that record and words its error. On every record it
/// accepts the two paths agree (RecordDecoderTests checks generated records both ways).
@_spi(Testing) public struct RecordDecoder {
    /// Giving up: the general path takes over.
    private struct GiveUp: Error {}

    private var p: JSONParser

    /// The record in `bytes`, or nil when the general path must decide.
    public static func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> Message? {
        var d = RecordDecoder(p: JSONParser(bytes))
        do throws(GiveUp) {
            return try d.record()
        } catch {
            return nil
        }
    }

    // MARK: The record

    private static let recordFields = RecordField.allCases
    private static let recordKeys: [[UInt8]] = RecordField.keys.map { Array($0.utf8) }
    private static let failureKeys: [[UInt8]] = ["code", "message", "retryable", "at"].map { Array($0.utf8) }
    private static let leaseKeys: [[UInt8]] = ["host", "pid", "until"].map { Array($0.utf8) }
    private static let eventKeys: [[UInt8]] = ["at", "event", "status", "error"].map { Array($0.utf8) }

    private mutating func record() throws(GiveUp) -> Message {
        var id: String?, to: String?, from: String?, body: String?, status: Status?, attempts: Int?
        var createdAt: Timestamp?, updatedAt: Timestamp?, notBefore: Timestamp?, nextAttemptAt: Timestamp?, expiresAt: Timestamp?
        var headers = Headers()
        var lastError: Message.Failure?
        var lease: Message.Lease?
        var history: [Message.Event] = []
        var extra: [JSONValue.Member] = []
        try object(keys: Self.recordKeys) { (d, k, name) throws(GiveUp) in
            guard k >= 0 else { return try d.extra(name, into: &extra) }
            switch Self.recordFields[k] {
            case .id:
                let s = try d.string()
                guard UUIDText.isCanonical(s) else { throw GiveUp() }
                id = s
            case .to:
                let s = try d.string()
                guard !s.isEmpty else { throw GiveUp() }
                to = s
            case .from: from = try d.null() ? nil : d.string()
            case .body: body = try d.string()
            case .headers: headers = try d.null() ? [] : d.headers()
            case .status: status = try d.status()
            case .attempts: attempts = try d.count()
            case .createdAt: createdAt = try d.timestamp()
            case .updatedAt: updatedAt = try d.timestamp()
            case .notBefore: notBefore = try d.null() ? nil : d.timestamp()
            case .nextAttemptAt: nextAttemptAt = try d.null() ? nil : d.timestamp()
            case .expiresAt: expiresAt = try d.null() ? nil : d.timestamp()
            case .lastError: lastError = try d.null() ? nil : d.failure()
            case .lease: lease = try d.null() ? nil : d.lease()
            case .history: history = try d.null() ? [] : d.history()
            }
        }
        p.skipWhitespace()
        guard p.index == p.bytes.count, let id, let to, let body, let status, let attempts, let createdAt, let updatedAt else {
            throw GiveUp()
        }
        return Message(id: id, to: to, from: from, body: body, headers: headers, status: status, attempts: attempts,
                       createdAt: createdAt, updatedAt: updatedAt, notBefore: notBefore, nextAttemptAt: nextAttemptAt,
                       expiresAt: expiresAt, lastError: lastError, lease: lease, history: history, extra: extra)
    }

    private mutating func failure() throws(GiveUp) -> Message.Failure {
        var code: String?, message: String?, retryable: Bool?, at: Timestamp?
        try object(keys: Self.failureKeys) { (d, k, _) throws(GiveUp) in
            switch k {
            case 0: code = try d.string()
            case 1: message = try d.string()
            case 2: retryable = try d.bool()
            case 3: at = try d.timestamp()
            default: try d.skipValue()  // the general path ignores other keys here
            }
        }
        guard let code, let message, let retryable, let at else { throw GiveUp() }
        return Message.Failure(code: code, message: message, retryable: retryable, at: at)
    }

    private mutating func lease() throws(GiveUp) -> Message.Lease {
        var host: String?, pid: Int?, until: Timestamp?
        try object(keys: Self.leaseKeys) { (d, k, _) throws(GiveUp) in
            switch k {
            case 0: host = try d.string()
            case 1: pid = try d.count()
            case 2: until = try d.timestamp()
            default: try d.skipValue()
            }
        }
        guard let host, let pid, pid <= Int(Int32.max), let until else { throw GiveUp() }
        return Message.Lease(host: host, pid: Int32(pid), until: until)
    }

    private mutating func history() throws(GiveUp) -> [Message.Event] {
        var events: [Message.Event] = []
        try list(UInt8(ascii: "["), UInt8(ascii: "]")) { (d) throws(GiveUp) in
            var at: Timestamp?, event: String?, status: Status?, error: Message.Failure?
            var extra: [JSONValue.Member] = []
            try d.object(keys: Self.eventKeys) { (d, k, name) throws(GiveUp) in
                switch k {
                case 0: at = try d.timestamp()
                case 1: event = try d.string()
                case 2: status = try d.status()
                case 3: error = try d.null() ? nil : d.failure()
                default: try d.extra(name, into: &extra)
                }
            }
            guard let at, let event, let status else { throw GiveUp() }
            events.append(Message.Event(at: at, event: event, status: status, error: error, extra: extra))
        }
        return events
    }

    private mutating func headers() throws(GiveUp) -> Headers {
        var result = Headers()
        try object(keys: []) { (d, _, name) throws(GiveUp) in
            // As the general path: a repeated header keeps its place and takes the last value.
            result[name] = try d.string()
        }
        return result
    }

    // MARK: Structure

    /// Reads an object, calling `member` with the index of each key in `keys` (or -1
    /// and its name for others) with the reader at the value, which `member` must read.
    /// A known key seen twice is read twice: the last wins, as on the general path.
    private mutating func object(keys: [[UInt8]], _ member: (inout RecordDecoder, Int, String) throws(GiveUp) -> Void) throws(GiveUp) {
        try list(UInt8(ascii: "{"), UInt8(ascii: "}")) { (d) throws(GiveUp) in
            let (k, name) = try d.key(keys)
            d.p.skipWhitespace()
            try d.expect(UInt8(ascii: ":"))
            d.p.skipWhitespace()
            try member(&d, k, name)
        }
    }

    /// Reads `open`, then items separated by commas up to `close` (there may be none),
    /// one nesting level deeper. `item` reads each, starting past any whitespace.
    private mutating func list(_ open: UInt8, _ close: UInt8, _ item: (inout RecordDecoder) throws(GiveUp) -> Void) throws(GiveUp) {
        try expect(open)
        try enter()
        p.skipWhitespace()
        if try peek() == close {
            p.index += 1
        } else {
            while true {
                p.skipWhitespace()
                try item(&self)
                p.skipWhitespace()
                let next = try peek()
                p.index += 1
                if next == close { break }
                guard next == UInt8(ascii: ",") else { throw GiveUp() }
            }
        }
        p.leave()
    }

    /// A key: its index in `keys` when it is one of them (with an empty name), else -1
    /// and the key. A known key spelled with escapes gives up.
    private mutating func key(_ keys: [[UInt8]]) throws(GiveUp) -> (Int, String) {
        guard try peek() == UInt8(ascii: "\"") else { throw GiveUp() }
        if let (start, end) = plainString() {
            let length = end - start
            for (k, candidate) in keys.enumerated() where candidate.count == length {
                if candidate.withUnsafeBufferPointer({ $0.elementsEqual(p.bytes[start..<end]) }) {
                    p.index = end + 1
                    return (k, "")
                }
            }
        }
        let name = try string()
        guard !keys.contains(Array(name.utf8)) else { throw GiveUp() }
        return (-1, name)
    }

    /// An unknown member's value, kept in `extra`; a repeated unknown key gives up.
    private mutating func extra(_ name: String, into extra: inout [JSONValue.Member]) throws(GiveUp) {
        guard !extra.contains(where: { $0.key == name }) else { throw GiveUp() }
        extra.append(JSONValue.Member(name, try value()))
    }

    // MARK: Values

    private func peek() throws(GiveUp) -> UInt8 {
        guard p.index < p.bytes.count else { throw GiveUp() }
        return p.bytes[p.index]
    }

    private mutating func expect(_ byte: UInt8) throws(GiveUp) {
        guard try peek() == byte else { throw GiveUp() }
        p.index += 1
    }

    private mutating func enter() throws(GiveUp) {
        do throws(JSONParser.Failure) { try p.enter() } catch { throw GiveUp() }
    }

    /// The bounds of the string at the reader when it has no escapes and is ASCII.
    private func plainString() -> (Int, Int)? {
        var i = p.index + 1
        while i < p.bytes.count {
            let byte = p.bytes[i]
            if byte == UInt8(ascii: "\"") { return (p.index + 1, i) }
            if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { return nil }
            i += 1
        }
        return nil
    }

    private mutating func string() throws(GiveUp) -> String {
        guard try peek() == UInt8(ascii: "\"") else { throw GiveUp() }
        do throws(JSONParser.Failure) { return try p.parseString() } catch { throw GiveUp() }
    }

    private mutating func value() throws(GiveUp) -> JSONValue {
        do throws(JSONParser.Failure) { return try p.parseValue() } catch { throw GiveUp() }
    }

    private mutating func skipValue() throws(GiveUp) { _ = try value() }

    /// True (and past it) when the value is `null`.
    private mutating func null() throws(GiveUp) -> Bool {
        guard try peek() == UInt8(ascii: "n") else { return false }
        guard case .null = try value() else { throw GiveUp() }
        return true
    }

    private mutating func bool() throws(GiveUp) -> Bool {
        guard case .bool(let b) = try value() else { throw GiveUp() }
        return b
    }

    /// A whole number ≥ 0 written as plain digits.
    private mutating func count() throws(GiveUp) -> Int {
        var n = 0
        var digits = 0
        while p.index < p.bytes.count {
            let d = p.bytes[p.index] &- UInt8(ascii: "0")
            guard d < 10 else { break }
            // Not plain digits (a sign, a fraction, an exponent, a leading zero, too
            // long to be sure of): the general path.
            guard digits < 18 else { throw GiveUp() }
            n = n * 10 + Int(d)
            digits += 1
            p.index += 1
        }
        guard digits > 0, !(digits > 1 && p.bytes[p.index - digits] == UInt8(ascii: "0")) else { throw GiveUp() }
        if p.index < p.bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(p.bytes[p.index]) {
            throw GiveUp()
        }
        return n
    }

    private mutating func timestamp() throws(GiveUp) -> Timestamp {
        guard try peek() == UInt8(ascii: "\""), let (start, end) = plainString(),
              let t = Timestamp.parse(rfc3339: UnsafeBufferPointer(rebasing: p.bytes[start..<end])) else { throw GiveUp() }
        p.index = end + 1
        return t
    }

    private mutating func status() throws(GiveUp) -> Status {
        guard let s = Status(rawValue: try string()) else { throw GiveUp() }
        return s
    }
}
