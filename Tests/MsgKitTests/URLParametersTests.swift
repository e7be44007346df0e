import MsgKit
import MsgSupport
import Testing

/// The one reader of a transport URL's parameters: each value by its type, each
/// refusal one line naming the parameter, what it must be and what it got.
@Suite struct URLParametersTests {
    static let names = ["concurrency", "input", "tls", "grace", "user"]

    func read(_ query: String) throws(MsgError) -> URLParameters {
        try URLParameters(PluginURL("x://h/p?" + query), "x:", names: Self.names)
    }

    @Test func valuesReadByTypeTheLastOfANameWinning() throws {
        let p = try read("concurrency=8&input=body&tls=no&grace=500ms&user=ann&concurrency=9")
        #expect(try p.int("concurrency", in: 1...64) == 9)
        #expect(try p.choice("input", ["record": 1, "body": 2]) == 2)
        #expect(try p.yes("tls") == false)
        #expect(try p.duration("grace") == MsgDuration(milliseconds: 500))
        #expect(try p.text("user", mustBe: "a name") { !$0.isEmpty } == "ann")
        #expect(try p.int("missing", in: 1...2) == nil && p.text("missing") == nil)
    }

    @Test(arguments: [
        ("concurrency=0", "x: parameter concurrency must be a number from 1 to 64, got '0'"),
        ("concurrency=eight", "x: parameter concurrency must be a number from 1 to 64, got 'eight'"),
        ("input=mail", "x: parameter input must be record or body, got 'mail'"),
        ("tls=maybe", "x: parameter tls must be yes or no, got 'maybe'"),
        ("user=", "x: parameter user must be a name, got ''"),
        ("concurency=4", "x: unknown parameter 'concurency' (did you mean concurrency=?)"),
        ("zzz=1", "x: unknown parameter 'zzz'; it takes concurrency, input, tls, grace, user"),
    ])
    func aBadValueOrNameIsRefusedNamingIt(query: String, said: String) throws {
        let error = #expect(throws: MsgError.self) {
            let p = try read(query)
            _ = try p.int("concurrency", in: 1...64)
            _ = try p.choice("input", ["record": 1, "body": 2])
            _ = try p.yes("tls")
            _ = try p.text("user", mustBe: "a name") { !$0.isEmpty }
        }
        #expect(error?.code == .config && error?.message == said, "\(String(describing: error))")
    }

    @Test func aDurationThatDoesNotReadNamesItsParameter() throws {
        let error = #expect(throws: MsgError.self) { _ = try read("grace=soon").duration("grace") }
        #expect(error?.code == .config && error?.message.hasPrefix("x: parameter grace: ") == true, "\(String(describing: error))")
    }
}
