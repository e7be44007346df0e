#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// The stored layout of a record: the one place that knows it (docs/DESIGN.md 2).
///
/// A record is one compact JSON object (no whitespace, one line) whose members come
/// in the order of ``RecordField``, each written only when set:
///
/// ```text
/// {"id":…,"to":…[,"from":…],"body":…[,"headers":{…}]            content
///  ,"status":…,"attempts":…,"created_at":…,"updated_at":…
///  [,"not_before":…][,"next_attempt_at":…][,"expires_at":…]
///  [,"last_error":{…}][,"lease":{…}]                               life
///  [,"<member msg does not know>":…]…                              extras
///  ,"history":[…]}                                                 history
/// ```
///
/// The writer (``write(_:to:includeHistory:)``) is driven by ``RecordField``, and
/// every reader or editor of the bytes is here too, so reordering the writer can
/// never silently break a fast path: ``parts(of:historyOffset:)`` finds the content,
/// life and history in stored text; ``spliced(_:historyOffset:as:appending:)`` gives
/// a record's new text by writing only its life anew and appending history events
/// (a claim or an outcome copies the body byte for byte); ``delivered(_:historyOffset:)``
/// cuts what a destination receives; ``isShapedAsWritten(_:historyOffset:id:)`` is the
/// listing's check that text is as msg wrote it; ``id(in:)`` reads an id by position.
/// `LayoutAgreementTests` proves each of them agrees with the writer and the decoder.
public enum RecordLayout {
    // MARK: Writing

    /// The content fields, in order: what a record says, never changed by its life.
    public static let content: [RecordField] = [.id, .to, .from, .body, .headers]
    /// The life fields, in order: what sending a record changes.
    public static let life: [RecordField] = [.status, .attempts, .createdAt, .updatedAt, .notBefore, .nextAttemptAt, .expiresAt, .lastError, .lease]

    /// Writes `m` as one compact JSON object (no newline); `includeHistory: false`
    /// leaves `history` out, as `queue ls` does.
    public static func write(_ m: Message, to w: inout JSONWriter, includeHistory: Bool = true) {
        w.raw("{")
        for field in RecordField.allCases {
            switch field {
            case .history:
                writeExtras(m, to: &w)
                if includeHistory {
                    w.key("history")
                    writeHistory(m.history, to: &w)
                }
            default:
                writeMember(field, of: m, to: &w)
            }
        }
        w.raw("}")
    }

    /// Writes one member of `m` (nothing when it is not set), with its leading comma
    /// unless it is `id`, the first.
    @_spi(Testing) public static func writeMember(_ field: RecordField, of m: Message, to w: inout JSONWriter) {
        switch field {
        case .id: w.key("id", first: true); w.string(m.id)
        case .to: w.key("to"); w.string(m.to)
        case .from: if let from = m.from { w.key("from"); w.string(from) }
        case .body: w.key("body"); w.string(m.body)
        case .headers:
            guard !m.headers.isEmpty else { return }
            w.key("headers"); w.raw("{")
            for (i, header) in m.headers.enumerated() {
                if i > 0 { w.raw(",") }
                w.string(header.key); w.raw(":"); w.string(header.value)
            }
            w.raw("}")
        case .status: w.key("status"); w.string(m.status.rawValue)
        case .attempts: w.key("attempts"); w.int(m.attempts)
        case .createdAt: w.key("created_at"); w.timestamp(m.createdAt)
        case .updatedAt: w.key("updated_at"); w.timestamp(m.updatedAt)
        case .notBefore: if let t = m.notBefore { w.key("not_before"); w.timestamp(t) }
        case .nextAttemptAt: if let t = m.nextAttemptAt { w.key("next_attempt_at"); w.timestamp(t) }
        case .expiresAt: if let t = m.expiresAt { w.key("expires_at"); w.timestamp(t) }
        case .lastError: if let e = m.lastError { w.key("last_error"); e.write(to: &w) }
        case .lease:
            guard let lease = m.lease else { return }
            w.key("lease"); w.raw("{")
            w.key("host", first: true); w.string(lease.host)
            w.key("pid"); w.int(Int(lease.pid))
            w.key("until"); w.timestamp(lease.until)
            w.raw("}")
        case .history:
            w.key("history")
            writeHistory(m.history, to: &w)
        }
    }

    /// The members msg does not know, in their order.
    static func writeExtras(_ m: Message, to w: inout JSONWriter) {
        for member in m.extra {
            w.raw(","); w.string(member.key); w.raw(":"); w.value(member.value)
        }
    }

    /// Writes a `history` array.
    public static func writeHistory(_ history: [Message.Event], to w: inout JSONWriter) {
        w.raw("[")
        for (i, event) in history.enumerated() {
            if i > 0 { w.raw(",") }
            event.write(to: &w)
        }
        w.raw("]")
    }

    /// The canonical text of `m` and where its `,"history":` starts.
    public static func encode(_ m: Message) -> (json: [UInt8], historyOffset: Int) {
        var w = JSONWriter(capacity: 512)
        write(m, to: &w, includeHistory: false)
        let offset = w.bytes.count - 1
        w.bytes.removeLast()
        w.key("history")
        writeHistory(m.history, to: &w)
        w.raw("}")
        return (w.bytes, offset)
    }

    // MARK: Reading the bytes

    /// Where the parts of a record's stored text are: the content is
    /// `json[..<lifeStart]` (from the opening brace), the life members
    /// `json[lifeStart..<lifeEnd]` (from the comma before `status`), the extras
    /// `json[lifeEnd..<historyOffset]`, then `,"history":[…]}`.
    public struct Parts: Sendable, Equatable {
        public let lifeStart: Int
        public let lifeEnd: Int
        public let historyOffset: Int
        /// The `status` value, quotes included.
        public let status: Range<Int>
        /// The `lease` member with its leading comma, when there is one.
        public let lease: Range<Int>?
    }

    private static let historyKey = Array(#","history":["#.utf8)

    /// The place in ``RecordField``'s order of the field a key names (0 `id` …
    /// 14 `history`), read from its bytes without hashing: this runs for every
    /// member of every record a claim or an outcome splices. Nil for a key msg does
    /// not know. `LayoutAgreementTests` checks it against ``RecordField``.
    @_spi(Testing) public static func place(_ k: UnsafeBufferPointer<UInt8>) -> Int? {
        func equals(_ s: StaticString) -> Bool {
            s.utf8CodeUnitCount == k.count && memcmp(k.baseAddress!, s.utf8Start, k.count) == 0
        }
        guard k.count >= 2 else { return nil }
        switch (k.count, k[0]) {
        case (2, UInt8(ascii: "i")): return equals("id") ? 0 : nil
        case (2, UInt8(ascii: "t")): return equals("to") ? 1 : nil
        case (4, UInt8(ascii: "f")): return equals("from") ? 2 : nil
        case (4, UInt8(ascii: "b")): return equals("body") ? 3 : nil
        case (7, UInt8(ascii: "h")): return equals("headers") ? 4 : (equals("history") ? 14 : nil)
        case (6, UInt8(ascii: "s")): return equals("status") ? 5 : nil
        case (8, UInt8(ascii: "a")): return equals("attempts") ? 6 : nil
        case (10, UInt8(ascii: "c")): return equals("created_at") ? 7 : nil
        case (10, UInt8(ascii: "u")): return equals("updated_at") ? 8 : nil
        case (10, UInt8(ascii: "n")): return equals("not_before") ? 9 : nil
        case (15, UInt8(ascii: "n")): return equals("next_attempt_at") ? 10 : nil
        case (10, UInt8(ascii: "e")): return equals("expires_at") ? 11 : nil
        case (10, UInt8(ascii: "l")): return equals("last_error") ? 12 : nil
        case (5, UInt8(ascii: "l")): return equals("lease") ? 13 : nil
        default: return nil
        }
    }

    /// id, to, body, status, attempts, created_at, updated_at: always written.
    private static let required: UInt32 = (1 << 0) | (1 << 1) | (1 << 3) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8)

    /// The parts of `json`, or nil when it is not exactly in the order msg writes
    /// (text edited by hand): then a caller encodes the record afresh instead.
    public static func parts(of json: UnsafeBufferPointer<UInt8>, historyOffset h: Int) -> Parts? {
        guard h > 1, h + historyKey.count < json.count, json[json.count - 1] == UInt8(ascii: "}"),
              json[json.count - 2] == UInt8(ascii: "]"), json.count >= 7,
              memcmp(json.baseAddress! + h, historyKey, historyKey.count) == 0,
              memcmp(json.baseAddress!, idPrefix, idPrefix.count) == 0 else { return nil }
        var members = Members(json, end: h)
        var seen: UInt32 = 0
        var last = -1                 // the place of the last known field
        var lifeStart: Int?
        var lifeEnd: Int?
        var status: Range<Int>?
        var lease: Range<Int>?
        while let m = members.next() {
            guard let place = place(UnsafeBufferPointer(rebasing: json[m.key])), place != 14 else {
                // An extra: only after the life members, never before them.
                guard lifeStart != nil else { return nil }
                if lifeEnd == nil { lifeEnd = m.start - 1 }
                continue
            }
            // Known fields in the order msg writes, each once, none after an extra.
            guard place > last, lifeEnd == nil else { return nil }
            last = place
            seen |= 1 << UInt32(place)
            if place == 5 {
                lifeStart = m.start - 1
                status = m.value
            } else if place == 13 {
                lease = (m.start - 1)..<m.end
            }
        }
        guard !members.failed, let lifeStart, let status, seen & required == required else { return nil }
        return Parts(lifeStart: lifeStart, lifeEnd: lifeEnd ?? h, historyOffset: h, status: status, lease: lease)
    }

    /// The text a destination receives (``Message/writeDelivered(to:)``), cut from
    /// stored text: `status` made `delivered`, the `lease` and `history` left out.
    /// Nil when the text is not in the order msg writes.
    public static func delivered(_ json: UnsafeBufferPointer<UInt8>, historyOffset: Int) -> [UInt8]? {
        guard let p = parts(of: json, historyOffset: historyOffset) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(historyOffset + 12)
        out.append(contentsOf: json[..<p.status.lowerBound])
        out.append(contentsOf: deliveredValue)
        if let lease = p.lease {
            out.append(contentsOf: json[p.status.upperBound..<lease.lowerBound])
            out.append(contentsOf: json[lease.upperBound..<historyOffset])
        } else {
            out.append(contentsOf: json[p.status.upperBound..<historyOffset])
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    private static let deliveredValue = Array(#""delivered""#.utf8)

    /// The text of `new`, given the stored text of the same record before its life
    /// changed: the content and extras are copied as bytes, the life members are
    /// written from `new`, and `appending` events are added to the history. Nil when
    /// the text is not in the order msg writes (then encode `new` afresh). The
    /// caller vouches that only the life changed and events were appended
    /// (``EncodedMessage/init(updating:to:)`` checks it).
    public static func spliced(_ json: UnsafeBufferPointer<UInt8>, historyOffset: Int, as new: Message,
                               appending events: ArraySlice<Message.Event>) -> (json: [UInt8], historyOffset: Int)? {
        guard let p = parts(of: json, historyOffset: historyOffset) else { return nil }
        var w = JSONWriter(capacity: json.count + 64 + 96 * events.count)
        w.bytes.append(contentsOf: json[..<p.lifeStart])
        for field in life { writeMember(field, of: new, to: &w) }
        w.bytes.append(contentsOf: json[p.lifeEnd..<historyOffset])
        let offset = w.bytes.count
        // `,"history":[` … `]}`: the old events as they are, then the new ones.
        w.bytes.append(contentsOf: json[historyOffset..<(json.count - 2)])
        var empty = json[json.count - 3] == UInt8(ascii: "[")
        for event in events {
            if !empty { w.raw(",") }
            empty = false
            event.write(to: &w)
        }
        w.raw("]}")
        return (w.bytes, offset)
    }

    /// Whether stored text looks as msg wrote it for the record `id`: its id first,
    /// its history where the store says, a closing brace last. A listing prints such
    /// text as it is and decodes any other (a damaged record then shows as its
    /// stand-in); it checks no more, to list as fast as it reads.
    public static func isShapedAsWritten(_ json: UnsafeBufferPointer<UInt8>, historyOffset h: Int, id: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = json.baseAddress, let idBase = id.baseAddress, h > 8 + id.count, h + historyKey.count < json.count,
              json[json.count - 1] == UInt8(ascii: "}"), json[7 + id.count] == UInt8(ascii: "\""),
              memcmp(base + h, historyKey, historyKey.count) == 0, memcmp(base, idPrefix, idPrefix.count) == 0,
              memcmp(base + 7, idBase, id.count) == 0 else { return false }
        return true
    }

    private static let idPrefix = Array(#"{"id":""#.utf8)

    /// The id of stored text msg wrote (`{"id":"` and 36 characters first), read by
    /// position; nil for text that does not start so.
    public static func id(in json: UnsafeBufferPointer<UInt8>) -> String? {
        guard json.count >= 44, UnsafeBufferPointer(rebasing: json[..<7]).elementsEqual(idPrefix), json[43] == UInt8(ascii: "\"") else { return nil }
        return String(decoding: UnsafeBufferPointer(rebasing: json[7..<43]), as: UTF8.self)
    }
}

/// The top-level members of compact object text, one at a time: where each starts
/// (its key's opening quote), its key (without quotes) and its value.
struct Members {
    private let b: UnsafeBufferPointer<UInt8>
    private let end: Int
    private var i = 1
    /// Whether the text did not read as members (then `next()` gives nil early).
    private(set) var failed = false

    init(_ b: UnsafeBufferPointer<UInt8>, end: Int) {
        self.b = b
        self.end = end
        failed = !(end <= b.count && end > 1 && b[0] == UInt8(ascii: "{"))
    }

    mutating func next() -> (start: Int, key: Range<Int>, value: Range<Int>, end: Int)? {
        guard !failed, i < end else { return nil }
        let start = i
        guard b[i] == UInt8(ascii: "\""), let keyEnd = stringEnd(i) else { return fail() }
        let key = (i + 1)..<(keyEnd - 1)
        // A key spelled with escapes could be a known key in disguise.
        guard !UnsafeBufferPointer(rebasing: b[key]).contains(UInt8(ascii: "\\")) else { return fail() }
        i = keyEnd
        guard i < end, b[i] == UInt8(ascii: ":") else { return fail() }
        i += 1
        guard let valueEnd = valueEnd(i) else { return fail() }
        let value = i..<valueEnd
        i = valueEnd
        if i < end {
            guard b[i] == UInt8(ascii: ",") else { return fail() }
            i += 1
        }
        return (start, key, value, valueEnd)
    }

    private mutating func fail() -> (start: Int, key: Range<Int>, value: Range<Int>, end: Int)? {
        failed = true
        return nil
    }

    /// The index just past the string starting at `start`: the first quote after it
    /// not escaped (an odd run of backslashes before it), found with `memchr` (a body
    /// of kilobytes is read here by every splice, a byte at a time it cost a flush of
    /// 4 KiB records 14% of its time).
    private func stringEnd(_ start: Int) -> Int? {
        guard let base = b.baseAddress else { return nil }
        var i = start + 1
        while i < end {
            guard let found = memchr(base + i, Int32(UInt8(ascii: "\"")), end - i) else { return nil }
            let quote = UnsafeRawPointer(found).assumingMemoryBound(to: UInt8.self) - base
            var backslashes = 0
            while quote - backslashes - 1 > start, b[quote - backslashes - 1] == UInt8(ascii: "\\") { backslashes += 1 }
            if backslashes % 2 == 0 { return quote + 1 }
            i = quote + 1
        }
        return nil
    }

    /// The index just past the value starting at `start` (compact text: no whitespace).
    private func valueEnd(_ start: Int) -> Int? {
        guard start < end else { return nil }
        switch b[start] {
        case UInt8(ascii: "\""):
            return stringEnd(start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var i = start
            while i < end {
                switch b[i] {
                case UInt8(ascii: "\""):
                    guard let e = stringEnd(i) else { return nil }
                    i = e
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return i + 1 }
                default: break
                }
                i += 1
            }
            return nil
        default:
            var i = start
            while i < end, b[i] != UInt8(ascii: ","), b[i] != UInt8(ascii: "}") {
                if b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { return nil }
                i += 1
            }
            return i
        }
    }
}
