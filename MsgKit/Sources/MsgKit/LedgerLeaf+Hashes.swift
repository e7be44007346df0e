#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import CCrypto

/// The hashes of ``LedgerLeaf``'s kinds, from libcrypto (``Digest/sha256(_:)-([UInt8])``).
extension LedgerLeaf {
    private static func append(_ v: UInt64, _ count: Int, to out: inout [UInt8]) {
        withUnsafeBytes(of: v.bigEndian) { out.append(contentsOf: $0[(8 - count)...]) }
    }

    // MARK: The hashes

    /// The bytes hashed for a leaf, up to what it holds.
    private static func prefix(_ kind: Kind, _ n: Int, _ id: String, capacity: Int) -> [UInt8] {
        var b: [UInt8] = [0]
        b.reserveCapacity(capacity + 17 + id.utf8.count)
        b.append(kind.rawValue)
        append(UInt64(n), 8, to: &b)
        var id = id
        id.withUTF8 { u in
            append(UInt64(u.count), 4, to: &b)
            b.append(contentsOf: u)
        }
        return b
    }

    /// Appends a history entry as msg writes it, after its length.
    private static func appendEntry(_ e: Message.Event, to b: inout [UInt8]) {
        var w = JSONWriter(capacity: 128)
        e.write(to: &w)
        append(UInt64(w.bytes.count), 4, to: &b)
        b.append(contentsOf: w.bytes)
    }

    /// The `state` leaf of `r` as it is, with all its history.
    public static func state(of r: EncodedMessage) throws(MsgError) -> LedgerLeaf {
        let m = r.message
        return LedgerLeaf(kind: .state, n: m.history.count, id: m.id, hash: try stateHash(r, m, entries: m.history.count))
    }

    /// The hash of a `state` leaf of `r` (whose message is `m`) with its first
    /// `entries` history entries: after the leaf's kind, number and id, its content
    /// (``content(_:_:)``) and the JSON array of those entries as msg writes it, each
    /// after its length. Hashed in parts, nothing copied: a record stored costs one.
    public static func stateHash(_ r: EncodedMessage, _ m: Message, entries: Int) throws(MsgError) -> Digest {
        try stateHash(r.json, r.historyOffset, m, entries: entries, contentEnd: contentEnd(r.json))
    }

    /// ``stateHash(_:_:entries:)`` of the record whose text is `text`, its history at
    /// `historyOffset` and its content ending at `found` (``contentEnd(_:)``), found
    /// once by a caller that fingerprints it too (``LedgerPrep``).
    static func stateHash(_ text: [UInt8], _ historyOffset: Int, _ m: Message, entries: Int,
                          contentEnd found: Int?) throws(MsgError) -> Digest {
        var (json, end) = (text, found)
        if end == nil {
            json = EncodedMessage(m).json
            end = contentEnd(json)
        }
        guard let end else { throw MsgError(.corrupt, "message \(m.id) cannot be written in msg's order") }
        var tail: [UInt8] = []
        if !m.extra.isEmpty {
            var w = JSONWriter()
            for member in m.extra {
                w.raw(","); w.string(member.key); w.raw(":"); w.value(member.value)
            }
            tail = w.bytes
        }
        // The entries: as stored when all of them (the text msg wrote), else written.
        var array: [UInt8] = []
        let h = historyOffset + 11
        let whole = entries == m.history.count && h < text.count && text[h] == UInt8(ascii: "[")
        if !whole {
            var w = JSONWriter(capacity: 128 * entries)
            w.raw("[")
            for (i, e) in m.history.prefix(entries).enumerated() {
                if i > 0 { w.raw(",") }
                e.write(to: &w)
            }
            w.raw("]")
            array = w.bytes
        }
        let arrayCount = whole ? text.count - 1 - h : array.count
        var id = m.id
        // The numbers, big-endian, on the stack (a record stored costs no allocation
        // here): the head (0, kind, n, the id's length) at 0..<14, then the lengths
        // and times at 14..<50, each hashed in its place among the texts.
        var fixed: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0)
        let hashed = withUnsafeMutableBytes(of: &fixed) { b -> Result<Digest, MsgError> in
            func put(_ v: UInt64, _ count: Int, at: Int) {
                for i in 0..<count { b[at + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(count - 1 - i))) }
            }
            b[1] = Kind.state.rawValue
            put(UInt64(entries), 8, at: 2)
            put(UInt64(id.utf8.count), 4, at: 10)
            put(UInt64(end), 4, at: 14)
            put(UInt64(tail.count), 4, at: 18)
            put(UInt64(bitPattern: m.createdAt.milliseconds), 8, at: 22)
            put(UInt64(bitPattern: m.notBefore?.milliseconds ?? -1), 8, at: 30)
            put(UInt64(bitPattern: m.expiresAt?.milliseconds ?? -1), 8, at: 38)
            put(UInt64(arrayCount), 4, at: 46)
            let fixed = UnsafeRawBufferPointer(b)
            return Result { () throws(MsgError) in
                try Digest.sha256 { add in
                    add(UnsafeRawBufferPointer(rebasing: fixed[0..<14]))
                    id.withUTF8 { add(UnsafeRawBufferPointer($0)) }
                    add(UnsafeRawBufferPointer(rebasing: fixed[14..<18]))
                    json.withUnsafeBytes { add(UnsafeRawBufferPointer(rebasing: $0[0..<end])) }
                    add(UnsafeRawBufferPointer(rebasing: fixed[18..<22]))
                    tail.withUnsafeBytes(add)
                    add(UnsafeRawBufferPointer(rebasing: fixed[22..<50]))
                    if whole {
                        text.withUnsafeBytes { add(UnsafeRawBufferPointer(rebasing: $0[h..<(text.count - 1)])) }
                    } else {
                        array.withUnsafeBytes(add)
                    }
                }
            }
        }
        return try hashed.get()
    }

    /// The `entry` leaves of `r`'s history entries from `from` on.
    public static func entries(of r: EncodedMessage, from: Int) throws(MsgError) -> [LedgerLeaf] {
        let m = r.message
        var out: [LedgerLeaf] = []
        for i in from..<m.history.count {
            out.append(LedgerLeaf(kind: .entry, n: i, id: "", hash: try entryHash(m.id, i, m.history[i])))
        }
        return out
    }

    /// The hash of the `entry` leaf of entry `n`, `e`, of message `id`.
    public static func entryHash(_ id: String, _ n: Int, _ e: Message.Event) throws(MsgError) -> Digest {
        var b = prefix(.entry, n, id, capacity: 128)
        appendEntry(e, to: &b)
        return try Digest.sha256(b)
    }

    /// The leaf of message `id`'s removal.
    public static func removed(_ id: String) throws(MsgError) -> LedgerLeaf {
        LedgerLeaf(kind: .removed, n: 0, id: id, hash: try Digest.sha256(prefix(.removed, 0, id, capacity: 0)))
    }

    /// The leaf of the ledger's beginning with `count` messages before it.
    public static func began(_ count: Int) throws(MsgError) -> LedgerLeaf {
        LedgerLeaf(kind: .began, n: count, id: "", hash: try Digest.sha256(prefix(.began, count, "", capacity: 0)))
    }

    /// The hash this leaf must have, computed from its kind, number and id (for
    /// the kinds that hold nothing else).
    public func expectedHash() throws(MsgError) -> Digest? {
        switch kind {
        case .removed: try Self.removed(id).hash
        case .began: try Self.began(n).hash
        case .state, .entry: nil
        }
    }

    /// The kept bytes of `r`'s leaf: its `state` for nil, else the `entry` of
    /// entry `n`.
    public static func bytes(_ r: EncodedMessage, entry n: Int?) throws(MsgError) -> [UInt8] {
        try bytes(r, r.message, entry: n)
    }

    /// ``bytes(_:entry:)`` of `r`, whose message `m` the caller has read already.
    public static func bytes(_ r: EncodedMessage, _ m: Message, entry n: Int?) throws(MsgError) -> [UInt8] {
        try bytes(r.json, r.historyOffset, m, entry: n, contentEnd: n == nil ? contentEnd(r.json) : nil)
    }

    /// ``bytes(_:_:entry:)`` of the record whose text is `text` (as
    /// ``stateHash(_:_:_:entries:contentEnd:)`` takes it).
    static func bytes(_ text: [UInt8], _ historyOffset: Int, _ m: Message, entry n: Int?,
                      contentEnd: Int?) throws(MsgError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(n == nil ? 96 : 48)
        if let n {
            LedgerLeaf(kind: .entry, n: n, id: "", hash: try entryHash(m.id, n, m.history[n])).write(to: &out)
        } else {
            let hash = try stateHash(text, historyOffset, m, entries: m.history.count, contentEnd: contentEnd)
            LedgerLeaf(kind: .state, n: m.history.count, id: m.id, hash: hash).write(to: &out)
        }
        return out
    }
}

extension LedgerLeaf {
    private static let statusKey = Array(#","status":""#.utf8)

    /// Where the content ends in a record's text msg wrote: at its first
    /// `,"status":"` (inside a JSON string a quote is escaped, so that is the key).
    static func contentEnd(_ json: [UInt8]) -> Int? {
        json.withUnsafeBytes { json -> Int? in
            guard let base = json.baseAddress else { return nil }
            var from = 0
            while from < json.count, let comma = memchr(base + from, Int32(UInt8(ascii: ",")), json.count - from) {
                let at = base.distance(to: UnsafeRawPointer(comma))
                if at + statusKey.count <= json.count, memcmp(comma, statusKey, statusKey.count) == 0 { return at }
                from = at + 1
            }
            return nil
        }
    }

    /// A fingerprint of `r`'s content as `queue edit` changes it (the text before
    /// `status`: id, to, from, body, headers; 32 bits, not a proof of anything):
    /// how a store sees cheaply, at every change, that the content stayed as it was
    /// (the ledger then takes an `entry` leaf, not a new `state`). The text before
    /// the first `,"status":"` is that: inside a JSON string a quote is escaped.
    /// 0 for text without one.
    public static func contentPrint(_ r: EncodedMessage) -> Int64 {
        contentPrint(r.json, contentEnd: contentEnd(r.json))
    }

    /// ``contentPrint(_:)`` of the record text `text`, whose content ends at `end`.
    static func contentPrint(_ text: [UInt8], contentEnd end: Int?) -> Int64 {
        guard let end else { return 0 }
        return text.withUnsafeBytes { json -> Int64 in
            // Eight bytes a step, multiplied and mixed (after wyhash's finalizer).
            var h: UInt64 = 0x9e37_79b9_7f4a_7c15 ^ UInt64(end)
            var i = 0
            while i + 8 <= end {
                h = (h ^ json.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0xff51_afd7_ed55_8ccd
                h ^= h >> 29
                i += 8
            }
            var last: UInt64 = 0
            while i < end {
                last = last << 8 | UInt64(json[i])
                i += 1
            }
            h = (h ^ last) &* 0xc4ce_b9fe_1a85_ec53
            h ^= h >> 32
            // 32 bits, signed: four bytes in each row (SQLite keeps an integer in as
            // few as it needs); an edit that kept them would only be taken as an entry
            // appended, and shown by the check, never lost.
            return Int64(Int32(truncatingIfNeeded: h))
        }
    }
}
