@_spi(Testing) import MsgKit
import MsgKitTesting
import Testing
import Foundation
import MsgSupport

/// The fast reader of stored records against the general path (JSONParser, then
/// Message(json:)): on every text both must give the same record or the same error,
/// and the fast one must read every record msg itself writes.
@Suite struct RecordDecoderTests {
    /// The general path, as `Message(decoding:origin:)` words it for `origin`.
    static func general(_ text: String, _ origin: RecordOrigin = .stored) -> Result<Message, MsgError> {
        let value: JSONValue
        do { value = try JSONParser.parse(text) } catch {
            return .failure(origin == .stored ? MsgError(.corrupt, "the stored record is not valid JSON: \(error)")
                                              : MsgError(.badInput, "invalid JSON: \(error)"))
        }
        do throws(MsgError) { return .success(try Message(json: value)) } catch {
            return .failure(origin == .stored ? MsgError(.corrupt, "the stored record is not valid: \(error.message)") : error)
        }
    }

    /// The one entry point, fast path first.
    private static func stored(_ text: String, _ origin: RecordOrigin = .stored) -> Result<Message, MsgError> {
        Array(text.utf8).withUnsafeBufferPointer { b in
            do throws(MsgError) { return .success(try Message(decoding: b, origin: origin)) } catch { return .failure(error) }
        }
    }

    static func fast(_ text: String) -> Message? {
        Array(text.utf8).withUnsafeBufferPointer { RecordDecoder.decode($0) }
    }

    /// Records as msg writes them, with every optional part present or not.
    static func records() -> [Message] {
        var rng = SplitMix64(seed: 7)
        var out: [Message] = []
        for n in 0..<300 {
            var m = Fixtures.message(n)
            let r = rng.next()
            if r & 1 != 0 { m.from = "alice é" }
            if r & 2 != 0 { m.headers = [] }
            if r & 4 != 0 { m.extra = [] }
            if r & 8 != 0 { m.notBefore = Fixtures.t0.adding(MsgDuration(milliseconds: Int64(n))) }
            if r & 16 != 0 { m.nextAttemptAt = Fixtures.t0.adding(.seconds(5)) }
            if r & 32 != 0 { m.lastError = .init(code: "timeout", message: "no \"answer\"\t", retryable: r & 64 != 0, at: Fixtures.t0) }
            if r & 128 != 0 { m.lease = .init(host: "h-\(n)", pid: Int32(n * 7919 % 100_000), until: Fixtures.t0) }
            if r & 256 != 0 {
                m.history.append(.init(at: Fixtures.t0, event: "failed", status: .failed,
                                       error: .init(code: "remote", message: "x", retryable: true, at: Fixtures.t0),
                                       extra: [.init("by", .string("me")), .init("n", .number("-1.5e3"))]))
            }
            if r & 512 != 0 { m.history = [] }
            m.attempts = Int(r >> 20 % 1000)
            m.status = Status.allCases[Int(r >> 40) % Status.allCases.count]
            out.append(m)
        }
        return out
    }

    @Test func readsEveryRecordMsgWritesAsTheGeneralPathDoes() throws {
        for m in Self.records() {
            let text = m.jsonText()
            let read = try #require(Self.fast(text), "the fast path gave up on \(text)")
            #expect(read == m)
            #expect(try Self.general(text).get() == m)
        }
    }

    /// Texts the fast path must leave to the general one, or read the same way.
    private static let variants: [(String, String)] = [
        (#""attempts":0"#, #""attempts":0,"attempts":2"#),  // a repeated key: the last wins
        (#""to":"bob""#, #""to":"bob","to":"carol""#),
        (#""to":"bob""#, #""to":null"#),
        (#""to":"bob""#, #""to":"""#),
        (#""to":"bob""#, #""to":7"#),
        (#""to":"bob""#, #""t\u006f":"bob""#),  // a known key spelled with an escape
        (#""to":"bob""#, #""to":"b\u006fb""#),
        (#""to":"bob""#, #""to" : "bob" "#),
        (#""to":"bob""#, #""to":"bob","from":null"#),
        (#""to":"bob""#, #""to":"bob","headers":null"#),
        (#""to":"bob""#, #""to":"bob","lease":null,"last_error":null,"not_before":null"#),
        (#""to":"bob""#, #""to":"bob","x":1,"x":2"#),
        (#""to":"bob""#, #""to":"bob","x":null"#),
        (#""to":"bob""#, #""to":"bob","deep":[[[[{"a":[1,2,{"b":null}]}]]]]"#),
        (#""attempts":0"#, #""attempts":1.0"#),
        (#""attempts":0"#, #""attempts":-0"#),
        (#""attempts":0"#, #""attempts":01"#),
        (#""attempts":0"#, #""attempts":1e2"#),
        (#""attempts":0"#, #""attempts":-3"#),
        (#""attempts":0"#, #""attempts":99999999999999999999"#),
        (#""attempts":0"#, #""attempts":"0""#),
        (#""status":"queued""#, #""status":"lost""#),
        (#""status":"queued""#, #""status":null"#),
        (#""created_at":"2026-11-22T13:08:00.000Z""#, #""created_at":"2026-11-22T13:08:00Z""#),
        (#""created_at":"2026-11-22T13:08:00.000Z""#, #""created_at":"2026-11-22T13:08:00.000\u005a""#),
        (#""created_at":"2026-11-22T13:08:00.000Z""#, #""created_at":"2026-13-22T13:08:00.000Z""#),
        (#""created_at":"2026-11-22T13:08:00.000Z""#, #""created_at":"2026-11-22T13:08:00.000+01:00""#),
        (#""headers":{"x-seq":"0"}"#, #""headers":{"x-seq":"0","a":"1","x-seq":"2"}"#),
        (#""headers":{"x-seq":"0"}"#, #""headers":{"x-seq":0}"#),
        (#""headers":{"x-seq":"0"}"#, #""headers":{}"#),
        (#""headers":{"x-seq":"0"}"#, #""headers":[]"#),
        (#""history":["#, #""history":null,"h":["#),
        (#""event":"queued""#, #""event":"queued","event":"x""#),
        (#""event":"queued""#, #""event":"queued","extra":true,"extra":false"#),
        (#""event":"queued""#, #""event":"queued","error":null"#),
        (#""event":"queued""#, #""event":"queued","error":{"code":"c","message":"m","retryable":true,"at":"2026-11-22T13:08:00.000Z","more":[1]}"#),
        (#""event":"queued""#, #""event":"queued","error":{"code":"c","message":"m","retryable":1,"at":"2026-11-22T13:08:00.000Z"}"#),
        (#""event":"queued""#, #""event":"queued","error":{"code":"c","retryable":true,"at":"2026-11-22T13:08:00.000Z"}"#),
        (#""status":"queued"}"#, #""status":"queued","when":1}"#),
        (#""status":"queued"}"#, #""status":"nope"}"#),
        (#""body":"#, #""lease":{"host":"h","pid":2147483648,"until":"2026-11-22T13:08:00.000Z"},"body":"#),
        (#""body":"#, #""lease":{"host":"h","pid":12,"until":"2026-11-22T13:08:00.000Z","x":1},"body":"#),
        (#""body":"#, #""lease":{"host":"h","until":"2026-11-22T13:08:00.000Z"},"body":"#),
        (#""body":"#, #""lease":[],"body":"#),
        (#""id":"#, #""id":"01890A5D-AC96-774B-BCCE-B302099A8057","x":"#),
        (#"}]}"#, #"}]} "#),
        (#"}]}"#, #"}]}x"#),
        (#"}]}"#, #"}]"#),
        (#"}]}"#, #"}],}"#),
        (#"{"id""#, #" {"id""#),
        (#"{"id""#, #"["#),
        (#""body":""#, #""body":"\ud800"#),
        (#""body":""#, #""body":"\u00e9\n"#),
    ]

    @Test func agreesWithTheGeneralPathOnEveryOtherShape() {
        let base = Fixtures.message(0).jsonText()
        for (from, to) in Self.variants {
            guard let range = base.range(of: from) else {
                Issue.record("the fixture has no \(from)")
                continue
            }
            let text = base.replacingCharacters(in: range, with: to)
            for origin in [RecordOrigin.stored, .input] {
                switch (Self.stored(text, origin), Self.general(text, origin)) {
                case (.success(let a), .success(let b)):
                    #expect(a == b, "\(text)")
                case (.failure(let a), .failure(let b)):
                    #expect(a.code == b.code && a.message == b.message, "\(text): \(a.message) | \(b.message)")
                case (let a, let b):
                    Issue.record("\(text): one entry point \(a), general path \(b)")
                }
            }
        }
    }

    @Test func refusesNestingAsDeepAsTheGeneralPathDoes() {
        let base = Fixtures.message(0).jsonText()
        for depth in [JSONParser.maxDepth - 2, JSONParser.maxDepth - 1, JSONParser.maxDepth] {
            let deep = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            let text = base.replacingOccurrences(of: #""status":"#, with: #""deep":\#(deep),"status":"#)
            switch (Self.stored(text), Self.general(text)) {
            case (.success(let a), .success(let b)): #expect(a == b)
            case (.failure(let a), .failure(let b)): #expect(a.message == b.message)
            case (let a, let b): Issue.record("depth \(depth): stored path \(a), general path \(b)")
            }
        }
    }
}
