import MsgKit
import MsgKitTesting
import Testing

@Suite struct MessageTests {
    @Test func roundTripsWithUnknownFields() throws {
        var m = Fixtures.message(1)
        m.lastError = .init(code: "timeout", message: "slow", retryable: true, at: Fixtures.t0)
        m.lease = .init(host: "h", pid: 42, until: Fixtures.t0)
        m.history.append(.init(at: Fixtures.t0, event: "attempt", status: .sending, extra: [.init("who", .string("me"))]))
        let text = m.jsonText()
        #expect(try Message(jsonText: text) == m)
        #expect(text.contains(#""pipeline":{"stage":1.50,"tags":["a",null]}"#))
        #expect(!m.jsonText(includeHistory: false).contains("history"))
    }

    @Test(arguments: [
        (#"{"to":"a"}"#, #"missing field "id""#),
        (#"{"id":"../../x","to":"a"}"#, #"field "id" must be a lower-case UUID"#),
        (#"{"id":"01890a5d-ac96-774b-bcce-b302099a8057","to":"","body":"b"}"#, #"field "to" must not be empty"#),
        (#"{"id":"01890a5d-ac96-774b-bcce-b302099a8057","to":"a","body":3}"#, #"field "body" must be a string, not a number"#),
        (#"{"id":"01890a5d-ac96-774b-bcce-b302099a8057","to":"a","body":"b","status":"lost"}"#, "unknown status 'lost'"),
        ("[1]", "expected a JSON object, got an array"),
    ])
    func namesTheBadField(json: String, message: String) {
        do {
            _ = try Message(jsonText: json)
            Issue.record("accepted \(json)")
        } catch {
            #expect(error.code == .badInput)
            #expect(error.message.contains(message), "\(error.message)")
        }
    }

    @Test func pluginURLsParse() throws {
        let u = try PluginURL("stdout:?fail=0.2&seed=7&msg=a%20b")
        #expect(u.scheme == "stdout" && u.path == "" && u.parameter("seed") == "7" && u.parameter("msg") == "a b")
        let t = try PluginURL("tcp://127.0.0.1:7000?token=x")
        #expect(t.authority == "127.0.0.1:7000" && t.parameter("token") == "x")
        #expect(try PluginURL("json:/tmp/q.json").path == "/tmp/q.json")
        #expect(throws: MsgError(.config, "")) { try PluginURL("/no/scheme") }
    }
}
