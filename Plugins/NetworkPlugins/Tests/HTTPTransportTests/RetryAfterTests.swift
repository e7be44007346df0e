import struct Foundation.URL
@testable import HTTPTransport
import MsgKit
import MsgSupport
import NIOHTTP1
import Testing

@Suite struct RetryAfterTests {
    let now: Int64 = 784_111_777_000  // Sun, 06 Nov 1994 08:49:37 GMT

    @Test func secondsAndTheThreeDateForms() {
        #expect(RetryAfter.milliseconds("120", now: now) == 120_000)
        #expect(RetryAfter.milliseconds(" 0 ", now: now) == 0)
        #expect(RetryAfter.milliseconds("Sun, 06 Nov 1994 08:50:37 GMT", now: now) == 60_000)
        #expect(RetryAfter.milliseconds("Sunday, 06-Nov-94 08:49:47 GMT", now: now) == 10_000)
        #expect(RetryAfter.milliseconds("Sun Nov  6 08:49:57 1994", now: now) == 20_000)
        #expect(RetryAfter.milliseconds("Sun, 06 Nov 1994 08:00:00 GMT", now: now) == 0, "a date past is no wait")
    }

    @Test func nonsenseAndHugeValues() {
        #expect(RetryAfter.milliseconds("soon", now: now) == nil)
        #expect(RetryAfter.milliseconds("-5", now: now) == nil)
        #expect(RetryAfter.milliseconds("Sun, 36 Nov 1994 08:49:37 GMT", now: now) == nil)
        #expect(RetryAfter.milliseconds("Sun, 06 Nox 1994 08:49:37 GMT", now: now) == nil)
        #expect(RetryAfter.milliseconds("99999999999999999999999", now: now) == RetryAfter.longest)
        #expect(RetryAfter.milliseconds("Fri, 01 Jan 2100 00:00:00 GMT", now: now) == RetryAfter.longest)
    }

    /// Years past 9999 (or before year 1) are no usable Retry-After, in each form,
    /// and never an overflow (year 1,000,000,000 crashed msg flush).
    @Test func yearsOutOfRangeAreNoWait() {
        for text in ["Sun, 06 Nov 1000000000 08:49:37 GMT", "Sunday, 06-Nov-1000000000 08:49:37 GMT", "Sun Nov  6 08:49:37 1000000000",
                     "Sun, 06 Nov 9223372036854775807 08:49:37 GMT", "Sun, 06 Nov -9223372036854775808 08:49:37 GMT",
                     "Sun, 06 Nov 10000 08:49:37 GMT", "Sun, 06 Nov 0 08:49:37 GMT"] {
            #expect(RetryAfter.milliseconds(text, now: now) == nil, "\(text)")
        }
        #expect(RetryAfter.milliseconds("Fri, 31 Dec 9999 23:59:59 GMT", now: .min) == nil, "now far in the past: no overflow")
        #expect(RetryAfter.milliseconds("Fri, 31 Dec 9999 23:59:59 GMT", now: now) == RetryAfter.longest)
    }

    /// Which redirects a POST follows (msg-http(7)).
    @Test func redirectSteps() throws {
        let from = try #require(URL(string: "https://api.example.com/hook"))
        var headers = HTTPHeaders([("Authorization", "Bearer x"), ("X-Api-Key", "k"), ("webhook-signature", "v1,abc"),
                                   ("Idempotency-Key", "\"id\""), ("Content-Type", "application/json")])
        headers.add(name: "User-Agent", value: "msg")
        func step(_ status: Int, _ location: String?, hops: Int = 0) -> Redirect.Step {
            Redirect.step(status: status, location: location, from: from, headers: headers, hops: hops, private: ["x-api-key"], host: "api.example.com")
        }
        guard case .follow(let same, let kept) = step(308, "/v2/hook") else { Issue.record("308 same origin"); return }
        #expect(same.absoluteString == "https://api.example.com/v2/hook" && kept.count == headers.count)
        guard case .follow(let other, let stripped) = step(307, "https://other.example.net/hook") else { Issue.record("307 elsewhere"); return }
        #expect(other.host == "other.example.net")
        #expect(stripped["Authorization"].isEmpty && stripped["X-Api-Key"].isEmpty && stripped["webhook-signature"].isEmpty)
        #expect(stripped.first(name: "Idempotency-Key") == "\"id\"" && stripped.first(name: "Content-Type") == "application/json")
        guard case .follow(_, let port) = step(307, "https://api.example.com:8443/hook") else { Issue.record("another port"); return }
        #expect(port["Authorization"].isEmpty, "another port is another origin")
        for code in [301, 302, 303] {
            guard case .refuse(let e) = step(code, "/v2") else { Issue.record("\(code) is refused"); continue }
            #expect(e.code == .config && e.message.contains("GET"))
        }
        guard case .refuse(let down) = step(308, "http://api.example.com/hook") else { Issue.record("a downgrade is refused"); return }
        #expect(down.message.contains("unencrypted"))
        guard case .refuse = step(308, "/again", hops: Redirect.limit) else { Issue.record("too many hops"); return }
        guard case .refuse = step(307, nil) else { Issue.record("no Location"); return }
        guard case .refuse = step(307, "ftp://example.com/x") else { Issue.record("another scheme"); return }
        guard case .done = step(304, "/x") else { Issue.record("304 is an answer"); return }
        guard case .done = step(200, nil) else { Issue.record("200 is an answer"); return }
    }

    /// Headers files with CRLF lines, and values with control characters.
    @Test func headersFilesAreReadAsBytes() throws {
        let two = try HTTPSettings.headers("Authorization: Bearer x\r\nX-Api-Key: k\r\n", file: "h")
        #expect(two.map(\.0) == ["Authorization", "X-Api-Key"] && two.map(\.1) == ["Bearer x", "k"])
        #expect(throws: MsgError.self) { try HTTPSettings.headers("X-A: a\rX-Injected: 1\n", file: "h") }
        #expect(HTTPSettings.hasControlBytes("text/plain\r\nX: 1") && !HTTPSettings.hasControlBytes("text/plain; charset=utf-8"))
    }

    @Test func civilDays() {
        #expect(RetryAfter.daysFromCivil(year: 1970, month: 1, day: 1) == 0)
        #expect(RetryAfter.daysFromCivil(year: 2000, month: 3, day: 1) == 11_017)
        #expect(RetryAfter.httpDate("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
    }

    @Test func base64RoundTrips() {
        #expect(Base64.encode(Array("Man".utf8)) == "TWFu")
        #expect(Base64.encode(Array("Ma".utf8)) == "TWE=")
        #expect(Base64.encode(Array("M".utf8)) == "TQ==")
        for n in 0..<40 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            #expect(Base64.decode(Base64.encode(bytes)) == bytes)
        }
        #expect(Base64.decode("not base64!") == nil)
    }
}
