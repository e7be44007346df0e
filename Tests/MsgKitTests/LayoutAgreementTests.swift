@_spi(Testing) import MsgKit
import MsgKitTesting
import MsgSupport
import Testing

/// One test that every byte-level reader and editor of stored text agrees with
/// the writer (``RecordLayout``), over records of every shape: the fast decoder
/// and the general one, the parts of the text, the delivered cut, the splice of a
/// new life and appended events, the listing's shape check and the id read by
/// position. Reordering the writer fails here, not silently in a fast path.
@Suite struct LayoutAgreementTests {
    /// Records with every optional field set or not, odd text, unknown members, a
    /// history of any length.
    static func records() -> [Message] {
        var rng = SplitMix64(seed: 26)
        return RecordDecoderTests.records() + (0..<200).map { n -> Message in
            var m = Fixtures.message(1000 + n)
            let r = rng.next()
            // Backslashes before quotes in every parity: the string's end is found by
            // the first quote after an even run of them.
            m.body = ["", "\u{0}\u{1}\u{1F}\\\"", String(repeating: "é漢😀", count: Int(r % 50)), #"},"status":"sent","lease":{"#,
                      "ends in a backslash \\", #"\\\"\\"\"#, String(repeating: "long \\\" body ", count: 300)][Int(r % 7)]
            if r & 0x10 != 0 { m.headers = [("status", "x"), ("Content-Type", "text/plain\r\n"), ("history", "[]")] }
            if r & 0x20 != 0 { m.extra = [.init("history2", .array([])), .init("zz", .object([.init("status", .string("q"))]))] }
            if r & 0x40 != 0 { m.expiresAt = Fixtures.t0.adding(.seconds(Int64(r % 1000))) }
            for k in 0..<Int(r >> 8 % 4) {
                m.history.append(.init(at: Fixtures.t0.adding(.seconds(Int64(k))), event: "attempt", status: .sending))
            }
            return m
        }
    }

    /// The byte-level key reader names every field at its place in RecordField.
    @Test func keysAreReadAtTheirPlaceInTheFieldTable() {
        for (i, field) in RecordField.allCases.enumerated() {
            let key = Array(field.key.utf8)
            #expect(key.withUnsafeBufferPointer { RecordLayout.place($0) } == i, "\(field.key)")
        }
        for other in ["idx", "To", "statuses", "lease ", "x", "history_"] {
            #expect(Array(other.utf8).withUnsafeBufferPointer { RecordLayout.place($0) } == nil, "\(other)")
        }
    }

    @Test func everyReaderAgreesWithTheWriter() throws {
        for m in Self.records() {
            let r = EncodedMessage(m)
            var w = JSONWriter()
            m.write(to: &w)
            #expect(r.json == w.bytes, "EncodedMessage and the writer")
            let text = String(decoding: r.json, as: UTF8.self)
            // Both decoders read what the writer wrote.
            #expect(RecordDecoderTests.fast(text) == m, "the fast decoder: \(text)")
            #expect(try RecordDecoderTests.general(text).get() == m, "the general decoder: \(text)")
            try r.json.withUnsafeBufferPointer { b in
                // The parts are where the writer put them.
                let p = try #require(RecordLayout.parts(of: b, historyOffset: r.historyOffset), "parts of \(text)")
                var content = JSONWriter()
                content.raw("{")
                for field in RecordLayout.content { RecordLayout.writeMember(field, of: m, to: &content) }
                #expect(Array(b[..<p.lifeStart]) == content.bytes, "the content ends where status begins")
                var life = JSONWriter()
                for field in RecordLayout.life { RecordLayout.writeMember(field, of: m, to: &life) }
                #expect(Array(b[p.lifeStart..<p.lifeEnd]) == life.bytes, "the life members")
                #expect(String(decoding: b[p.status], as: UTF8.self) == "\"\(m.status.rawValue)\"")
                #expect((p.lease != nil) == (m.lease != nil))
                // The listing's check and the id read by position.
                let id = Array(m.id.utf8)
                #expect(id.withUnsafeBufferPointer { RecordLayout.isShapedAsWritten(b, historyOffset: r.historyOffset, id: $0) })
                #expect(RecordLayout.id(in: b) == m.id)
            }
            // What a destination receives.
            var delivered = JSONWriter()
            m.writeDelivered(to: &delivered)
            #expect(r.deliveredJSON == delivered.bytes, "the delivered cut of \(text)")
            // Text msg wrote is kept as it is.
            #expect(try EncodedMessage(stored: r.json, historyOffset: r.historyOffset).json == r.json)
        }
    }

    /// A new life and appended events spliced into stored text give exactly the
    /// bytes of encoding the changed record, for every transition msg makes.
    @Test func aSplicedLifeIsTheEncodedRecord() throws {
        var rng = SplitMix64(seed: 6)
        for m in Self.records() {
            let r = EncodedMessage(m)
            for _ in 0..<4 {
                var x = m
                let bits = rng.next()
                x.status = Status.allCases[Int(bits % UInt64(Status.allCases.count))]
                x.attempts = Int(bits >> 8 % 7)
                x.updatedAt = x.updatedAt.adding(.seconds(Int64(bits >> 16 % 100)))
                x.nextAttemptAt = bits & 1 == 0 ? nil : Fixtures.t0.adding(.seconds(9))
                x.lastError = bits & 2 == 0 ? nil : .init(code: "remote", message: "boom \"x\"\n", retryable: bits & 4 == 0, at: Fixtures.t0)
                x.lease = bits & 8 == 0 ? nil : .init(host: "host-é", pid: 4242, until: Fixtures.t0.adding(.seconds(60)))
                x.notBefore = bits & 16 == 0 ? x.notBefore : nil
                x.expiresAt = bits & 32 == 0 ? x.expiresAt : Fixtures.t0
                for k in 0..<Int(bits >> 24 % 3) {
                    x.history.append(.init(at: Fixtures.t0.adding(.seconds(Int64(k))), event: "failed", status: .failed,
                                           error: k == 0 ? nil : .init(code: "c", message: "m", retryable: true, at: Fixtures.t0)))
                }
                let spliced = EncodedMessage(updating: r, to: x)
                let encoded = EncodedMessage(x)
                #expect(spliced.json == encoded.json, "spliced \(String(decoding: spliced.json, as: UTF8.self))")
                #expect(spliced.historyOffset == encoded.historyOffset && spliced.message == x)
            }
        }
    }

    /// Text not in the order msg writes is never spliced or cut: it is encoded afresh.
    @Test func textOutOfOrderIsEncodedAfresh() throws {
        let m = Fixtures.message(7)
        let r = EncodedMessage(m)
        let text = String(decoding: r.json, as: UTF8.self)
        let swapped = text.replacingOccurrences(of: #","attempts":0"#, with: "").replacingOccurrences(of: #","status":"queued""#, with: #","attempts":0,"status":"queued""#)
        let bytes = Array(swapped.utf8)
        let offset = try #require(swapped.range(of: #","history":"#)).lowerBound.utf16Offset(in: swapped)
        #expect(bytes.withUnsafeBufferPointer { RecordLayout.parts(of: $0, historyOffset: offset) } == nil)
        let stored = try EncodedMessage(stored: bytes, historyOffset: offset)
        var x = stored.message
        x.status = .sending
        #expect(EncodedMessage(updating: stored, to: x).json == EncodedMessage(x).json)
    }
}
