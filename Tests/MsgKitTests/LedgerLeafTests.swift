import MsgKit
import Testing

/// ``LedgerLeaf``'s hash as msg-ledger(1) specifies it, computed here again from
/// the spec, byte by byte; its two kept formats; ``UUIDText`` over bytes, which
/// format 2 keeps an id in.
@Suite struct LedgerLeafTests {
    /// `v` in `count` bytes, big-endian.
    static func be(_ v: Int64, _ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: v) >> (8 * UInt64(count - 1 - $0))) }
    }

    /// The records a state leaf is made of: msg's own, one with fields msg does not
    /// know and every time set, one with no history.
    static let records = [
        #"{"id":"01a22263-8383-73e5-b7fd-1a6b336db1f4","to":"u@example.com","body":"hello","status":"queued","attempts":0,"created_at":"2026-11-28T13:41:16.803Z","updated_at":"2026-11-28T13:41:16.803Z","history":[{"at":"2026-11-28T13:41:16.803Z","event":"queued","status":"queued"}]}"#,
        #"{"id":"01a22263-8383-73e6-beee-37eee3a71f6d","to":"v@example.com","from":"me","body":"\u00e9 \"q\"","headers":{"X":"1"},"status":"failed","attempts":1,"created_at":"2026-11-28T13:41:16.803Z","updated_at":"2026-11-28T13:41:17.000Z","not_before":"2026-11-28T14:00:00.000Z","expires_at":"2026-11-29T00:00:00.000Z","error":{"code":"remote","message":"no","retryable":true,"at":"2026-11-28T13:41:17.000Z"},"tag":[1,{"a":null}],"history":[{"at":"2026-11-28T13:41:16.803Z","event":"queued","status":"queued"},{"at":"2026-11-28T13:41:17.000Z","event":"failed","status":"failed"}]}"#,
        #"{"id":"01a22263-8383-73e7-8000-000000000000","to":"w","body":"","status":"queued","attempts":0,"created_at":"2026-11-28T13:41:16.803Z","updated_at":"2026-11-28T13:41:16.803Z","history":[]}"#,
    ]

    /// The state leaf's hash of `r` with its first `entries` entries, from the spec:
    /// SHA-256 of 0, the kind, n, the id, the content (the text up to `,"status":"`),
    /// the fields msg does not know, the three times, the entries' JSON array.
    static func specified(_ r: EncodedMessage, entries: Int) throws -> Digest {
        let m = r.message
        let text = r.json
        let status = Array(#","status":""#.utf8)
        let end = try #require((0..<text.count).first { text[$0...].starts(with: status) })
        var tail: [UInt8] = []
        for member in m.extra {
            var w = JSONWriter()
            w.raw(","); w.string(member.key); w.raw(":"); w.value(member.value)
            tail += w.bytes
        }
        var array = Array("[".utf8)
        for (i, e) in m.history.prefix(entries).enumerated() {
            var w = JSONWriter()
            e.write(to: &w)
            array += (i > 0 ? Array(",".utf8) : []) + w.bytes
        }
        array += Array("]".utf8)
        let id = Array(m.id.utf8)
        var b: [UInt8] = [0, 1] + be(Int64(entries), 8) + be(Int64(id.count), 4) + id
        b += be(Int64(end), 4) + text[0..<end] + be(Int64(tail.count), 4) + tail
        b += be(m.createdAt.milliseconds, 8) + be(m.notBefore?.milliseconds ?? -1, 8) + be(m.expiresAt?.milliseconds ?? -1, 8)
        b += be(Int64(array.count), 4) + array
        return try Digest.sha256(b)
    }

    @Test(arguments: 0..<records.count)
    func aStateLeafHashesWhatTheSpecSays(_ index: Int) throws {
        let m = try Array(Self.records[index].utf8).withUnsafeBufferPointer { try Message(decoding: $0, origin: .stored) }
        let r = EncodedMessage(m)
        for entries in 0...m.history.count {
            #expect(try LedgerLeaf.stateHash(r, m, entries: entries) == Self.specified(r, entries: entries), "\(entries) entries")
        }
        let leaf = try LedgerLeaf.state(of: r)
        #expect(leaf.hash == (try Self.specified(r, entries: m.history.count)))
        var kept: [UInt8] = []
        leaf.write(to: &kept)
        #expect(kept.count == 1 + 1 + 1 + 16 + 32, "the id kept as its 16 bytes")
        #expect(try LedgerPrep(r, stored: true).leaf(r, stored: true) == kept, "the leaf a record stored anew takes")
    }

    @Test func aLeafNamingAUUIDIsKeptInFormatTwoAndAnyOtherInFormatOne() throws {
        let id = "01a22263-8383-73e5-b7fd-1a6b336db1f4"
        let hash = try Digest.sha256([7])
        let cases: [(LedgerLeaf, version: UInt8, size: Int)] = [
            (LedgerLeaf(kind: .state, n: 200, id: id, hash: hash), 2, 1 + 2 + 1 + 16 + 32),
            (try LedgerLeaf.removed(id), 2, 1 + 1 + 1 + 16 + 32),
            (LedgerLeaf(kind: .state, n: 1, id: id.uppercased(), hash: hash), 1, 1 + 1 + 1 + 36 + 32),
            (LedgerLeaf(kind: .state, n: 1, id: "forged", hash: hash), 1, 1 + 1 + 1 + 6 + 32),
            (LedgerLeaf(kind: .entry, n: 3, id: "", hash: hash), 1, 1 + 1 + 1 + 32),
            (try LedgerLeaf.began(5), 1, 1 + 1 + 1 + 32),
        ]
        for (leaf, version, size) in cases {
            #expect(leaf.version == version, "\(leaf.kind) \(leaf.id)")
            var kept: [UInt8] = []
            leaf.write(to: &kept)
            #expect(kept.count == size && kept[0] == leaf.kind.rawValue | (version - 1) << 4, "\(leaf.kind) \(leaf.id): \(kept)")
            let read = kept.withUnsafeBytes { LedgerLeaf.read($0, at: 0) }
            #expect(read?.leaf == leaf && read?.end == kept.count)
        }
        // A leaf an older msg kept in format 1 reads as the same message and hash.
        let old = LedgerLeaf(kind: .state, version: 1, n: 200, id: id, hash: hash)
        var kept: [UInt8] = []
        old.write(to: &kept)
        let read = try #require(kept.withUnsafeBytes { LedgerLeaf.read($0, at: 0) }?.leaf)
        #expect(kept.count == 1 + 2 + 1 + 36 + 32 && read.version == 1 && read.isKnownFormat)
        #expect(read.id == id && read.hash == hash && read.n == 200)
        // Format 2 holds an id of 16 bytes, nothing else; a newer format is read, and named.
        var short = Array(kept)
        short[0] = 0x11
        #expect(short.withUnsafeBytes { LedgerLeaf.read($0, at: 0) } == nil, "36 bytes of id in format 2")
        var newer = Array(kept)
        newer[0] = 0x21
        let third = try #require(newer.withUnsafeBytes { LedgerLeaf.read($0, at: 0) }?.leaf)
        #expect(third.version == 3 && !third.isKnownFormat)
    }

    @Test func aUUIDIsItsSixteenBytesBothWays() throws {
        var bytes: [UInt8] = (0..<16).map { UInt8($0 * 17) }
        for round in 0..<200 {
            let text = UUIDText.format(bytes)
            #expect(UUIDText.isCanonical(text), "\(text)")
            #expect(text == bytes.withUnsafeBytes { UUIDText.format($0) })
            let back = try #require(Array(text.utf8).withUnsafeBufferPointer { UUIDText.bytes($0) })
            #expect(withUnsafeBytes(of: back) { Array($0) } == bytes, "round \(round): \(text)")
            bytes = bytes.enumerated().map { UInt8(truncatingIfNeeded: Int($1) &* 31 &+ $0 &+ round) }
        }
    }

    @Test(arguments: [
        "01A22263-8383-73e5-b7fd-1a6b336db1f4", "01a22263-8383-73e5-b7fd-1a6b336db1fg", "01a22263_8383-73e5-b7fd-1a6b336db1f4",
        "01a22263-8383-73e5-b7fd-1a6b336db1f", "01a22263-8383-73e5-b7fd-1a6b336db1f40", "01a222638-383-73e5-b7fd-1a6b336db1f4",
        "01a22263-8383-73e5-b7fd-1a6b336db1f/", "01a22263-8383-73e5-b7fd-1a6b336db1f:", "01a22263-8383-73e5-b7fd-1a6b336db1f`", "",
    ])
    func otherTextIsNoUUID(_ text: String) {
        #expect(!UUIDText.isCanonical(text))
        #expect(Array(text.utf8).withUnsafeBufferPointer { UUIDText.bytes($0) } == nil)
    }
}
