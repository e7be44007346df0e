import MsgKit
import Testing

@Suite struct TimestampTests {
    @Test(arguments: [
        ("2026-11-22T13:08:00.123Z", "2026-11-22T13:08:00.123Z"),
        ("2026-11-22T13:08:00Z", "2026-11-22T13:08:00.000Z"),
        ("2026-11-22T14:08:00.5+01:00", "2026-11-22T13:08:00.500Z"),
        ("2026-11-22t13:08:00.123456z", "2026-11-22T13:08:00.123Z"),
        ("2000-02-29T23:59:59.999-00:30", "2000-03-01T00:29:59.999Z"),
        ("1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999Z"),
    ])
    func parsesAndFormats(input: String, expected: String) throws {
        let t = try #require(Timestamp(rfc3339: input))
        #expect(t.description == expected)
        #expect(Timestamp(rfc3339: t.description) == t)
    }

    @Test(arguments: ["", "2026-11-22", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-11-22T13:08:00",
                      "2026-11-22T25:00:00Z", "2026-11-22T13:08:00.Z", "2026-11-22T13:08:00Zjunk", "2001-02-29T00:00:00Z"])
    func refusesInvalid(input: String) {
        #expect(Timestamp(rfc3339: input) == nil)
    }

    @Test func roundTripsAcrossCenturies() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let t = Timestamp(milliseconds: Int64.random(in: -2_000_000_000_000...8_000_000_000_000, using: &rng))
            #expect(Timestamp(rfc3339: t.description) == t, "\(t.milliseconds)")
        }
    }
}

@Suite struct DurationTests {
    @Test(arguments: [("250ms", 250), ("5s", 5000), ("2m", 120_000), ("1h", 3_600_000), ("7d", 604_800_000),
                      ("1h30m", 5_400_000), ("0s", 0)] as [(String, Int64)])
    func parses(text: String, ms: Int64) throws {
        #expect(try MsgDuration(parsing: text).milliseconds == ms)
    }

    @Test(arguments: ["", "5", "s", "5x", "-5s", "5 s", "1.5s", "99999999999999999999d", "5sm"])
    func refuses(text: String) {
        #expect(throws: MsgError(.badInput, "")) { try MsgDuration(parsing: text) }
    }

    @Test func errorSaysWhatIsAccepted() {
        do {
            _ = try MsgDuration(parsing: "5x")
            Issue.record("no error")
        } catch {
            #expect(error.message.contains("unknown unit 'x'") && error.message.contains("250ms"))
        }
    }

    @Test func describesExactly() throws {
        #expect(MsgDuration(milliseconds: 1500).description == "1500ms")
        #expect(MsgDuration(milliseconds: 120_000).description == "2m")
        #expect(try MsgDuration(parsing: MsgDuration(milliseconds: 86_400_000 * 3).description).milliseconds == 86_400_000 * 3)
    }
}
