@testable import HTTPTransport
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
