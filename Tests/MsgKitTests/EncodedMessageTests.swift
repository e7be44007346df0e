@_spi(Testing) import MsgKit
import MsgKitTesting
import Testing

/// The encoded record that crosses the plugin boundary: the text a store keeps,
/// the text a destination receives, and what stands in for text that does not read.
@Suite struct EncodedMessageTests {
    @Test func theDeliveredTextCutFromTheStoredTextIsTheDeliveredRecord() throws {
        for m in RecordDecoderTests.records() {
            var w = JSONWriter()
            m.writeDelivered(to: &w)
            let r = EncodedMessage(m)
            #expect(String(decoding: r.deliveredJSON, as: UTF8.self) == String(decoding: w.bytes, as: UTF8.self))
        }
    }

    @Test func aHeaderOrAnUnknownFieldNamedLikeStatusOrLeaseIsNotCut() throws {
        var m = Fixtures.message(1)
        m.headers = [("status", "x"), ("lease", "y")]
        m.extra = [.init("nested", .object([.init("status", .string("z")), .init("lease", .null)]))]
        m.lease = .init(host: "h", pid: 1, until: Fixtures.t0)
        m.body = #"a","status":"b","lease":{"#
        var w = JSONWriter()
        m.writeDelivered(to: &w)
        #expect(EncodedMessage(m).deliveredJSON == w.bytes)
        let delivered = try Message(jsonText: String(decoding: w.bytes, as: UTF8.self))
        #expect(delivered.status == .delivered && delivered.lease == nil && delivered.headers == m.headers && delivered.body == m.body)
    }

    @Test func theFieldsReadInPlaceAreTheRecordsOwn() throws {
        var m = Fixtures.message(4)
        m.status = .sending
        m.to = "carol@example.com"
        let stored = EncodedMessage(m)
        let updated = try { () throws in
            var x = m
            try x.transition(to: .failed, event: "attempt", at: Timestamp(milliseconds: m.createdAt.milliseconds + 5))
            return EncodedMessage(updating: stored, to: x)
        }()
        let damaged = EncodedMessage.damaged(id: "d1", to: nil, createdAt: Fixtures.t0, text: Array("{".utf8),
                                             error: MsgError(.corrupt, "cut"), now: Fixtures.t0)
        for r in [stored, updated, damaged, try EncodedMessage(stored: updated.json, historyOffset: updated.historyOffset)] {
            let whole = r.message
            #expect(r.id == whole.id && r.to == whole.to && r.status == whole.status)
            #expect(r.reading { ($0.history.count, $0.createdAt) } == (whole.history.count, whole.createdAt))
            #expect(r.reading { $0.isDamaged } == (r.id == "d1"))
        }
        #expect(updated.status == .failed && stored.status == .sending && damaged.status == .dead)
    }

    @Test func storedTextIsKeptByteForByteWhenMsgWroteIt() throws {
        let r = EncodedMessage(Fixtures.message(3))
        let read = try EncodedMessage(stored: r.json, historyOffset: r.historyOffset)
        #expect(read == r)
    }

    @Test func storedTextEditedByHandIsEncodedAfresh() throws {
        let r = EncodedMessage(Fixtures.message(3))
        let text = String(decoding: r.json, as: UTF8.self)
        let spaced = Array(text.replacingOccurrences(of: #","to":"#, with: ",\n  \"to\" : ").utf8)
        for (json, offset) in [(spaced, r.historyOffset + 6), (r.json, r.historyOffset - 1), (r.json, nil)] {
            let read = try EncodedMessage(stored: json, historyOffset: offset)
            #expect(read == r, "\(String(decoding: json, as: UTF8.self))")
        }
    }

    @Test func damagedTextIsRefusedAsCorruptAndKeptWholeInItsStandIn() throws {
        let text = Array(#"{"id":"01890a5d-ac96-774b-bcce-b302099a8057","to":"bob","body":"#.utf8)
        #expect(throws: MsgError(.corrupt, "")) { try EncodedMessage(stored: text, historyOffset: 10) }
        let error = MsgError(.corrupt, "the stored record is not valid JSON: unexpected end at column 66")
        let d = EncodedMessage.damaged(id: "01890a5d-ac96-774b-bcce-b302099a8057", to: "bob", createdAt: Fixtures.t0,
                                       text: text, error: error, now: Fixtures.t0.adding(.seconds(5)))
        #expect(d.message.isDamaged && d.message.status == .dead && d.message.to == "bob" && d.message.createdAt == Fixtures.t0)
        #expect(d.message.extra == [.init("damaged_record", .string(String(decoding: text, as: UTF8.self)))])
        #expect(d.message.lastError?.code == "corrupt" && d.message.lastError?.message.contains("unexpected end at column 66") == true)
        // The stand-in is itself a record: it reads back as one, still damaged.
        let again = try EncodedMessage(stored: d.json, historyOffset: d.historyOffset)
        #expect(again == d && again.message.isDamaged)
        let binary = EncodedMessage.damaged(id: d.message.id, to: nil, createdAt: Fixtures.t0, text: [0xFF, 0x7B], error: error, now: Fixtures.t0)
        #expect(binary.message.extra == [.init("damaged_record_hex", .string("ff7b"))] && binary.message.to == "?")
    }

    @Test func headersKeepTheirFirstPlaceAndTheLastValue() {
        var h: Headers = [("a", "1"), ("b", "2"), ("a", "3")]
        #expect(h.map(\.key) == ["a", "b"] && h["a"] == "3")
        h["b"] = nil
        h["c"] = "4"
        h.merge([("a", "5"), ("d", "6")])
        h.remove(["c"])
        #expect(h.map { "\($0.key)=\($0.value)" } == ["a=5", "d=6"])
        #expect(h != [("d", "6"), ("a", "5")], "order is part of a record")
    }

    @Test func aDraftIsReadByTheRecordsReaderAndStartsANewLife() throws {
        let json = try JSONParser.parse(#"{"to":"bob","body":"hi","status":"dead","attempts":9,"history":[],"x-mine":1,"not_before":"2026-11-22T13:08:00.000Z"}"#)
        let d = try Draft(json: json)
        #expect(d.to == "bob" && d.body == "hi" && d.id == nil && d.extra == [.init("x-mine", .number("1"))])
        #expect(d.notBefore == Fixtures.t0)
        for (text, message) in [
            (#"{"body":1}"#, #"field "body" must be a string, not a number"#),
            (#"{"to":"","body":"x"}"#, #"field "to" must not be empty"#),
            (#"{"to":"b"}"#, #"missing field "body""#),
            (#"{"id":"X","body":"x"}"#, #"field "id" must be a lower-case UUID such as 01890a5d-ac96-774b-bcce-b302099a8057"#),
            (#"{"body":"x","headers":{"a":2}}"#, #"field "headers.a" must be a string"#),
        ] {
            #expect(throws: MsgError(.badInput, "")) { try Draft(json: try JSONParser.parse(text)) }
            do { _ = try Draft(json: try JSONParser.parse(text)) } catch let error as MsgError { #expect(error.message == message) }
        }
    }

    @Test func dueAtIsTheLaterOfNotBeforeAndTheNextAttempt() {
        var m = Fixtures.message(1)
        #expect(m.dueAt == nil)
        m.notBefore = Fixtures.t0.adding(.seconds(9))
        m.nextAttemptAt = Fixtures.t0.adding(.seconds(3))
        #expect(m.dueAt == Fixtures.t0.adding(.seconds(9)))
        m.notBefore = nil
        #expect(m.dueAt == Fixtures.t0.adding(.seconds(3)))
    }
}
