import MsgEngine
import MsgKit
import MsgKitTesting
import Testing

/// What `flush --watch` tells the journal: a line per failure at most once a
/// destination per interval (the rest counted in the next), and one when it
/// delivers again; nothing while all is well.
@Suite struct OutcomeLogTests {
    func failed(_ n: Int, to: String = "api", attempts: Int = 1, dead: Bool = false, at: Timestamp) throws -> Message {
        var m = Fixtures.message(n, to: to)
        try m.transition(to: .sending, event: "attempt", at: at)
        m.attempts = attempts
        let failure = Message.Failure(MsgError(.remote, "503\nService Unavailable"), at: at)
        m.lastError = failure
        if dead {
            try m.transition(to: .dead, event: "dead", at: at, error: failure)
        } else {
            m.nextAttemptAt = at.adding(.seconds(2))
            try m.transition(to: .failed, event: "failed", at: at, error: failure)
        }
        return m
    }

    func sent(_ n: Int, to: String = "api", at: Timestamp) throws -> Message {
        var m = Fixtures.message(n, to: to)
        try m.transition(to: .sending, event: "attempt", at: at)
        try m.transition(to: .sent, event: "sent", at: at)
        return m
    }

    @Test func anOutageIsAFewLinesAMinuteAndItsEndOne() throws {
        var log = OutcomeLog(interval: .seconds(60))
        let t0 = Fixtures.t0
        #expect(log.outcome(try sent(0, at: t0), destination: "api", now: t0) == nil, "quiet while all is well")
        let first = try #require(log.outcome(try failed(1, at: t0), destination: "api", now: t0))
        #expect(first == "destination api: \(Fixtures.message(1, to: "api").id) failed (attempt 1): remote: 503 Service Unavailable; next attempt at \(t0.adding(.seconds(2)))")
        var lines: [String] = []
        for i in 2...50 {
            let at = t0.adding(MsgDuration(milliseconds: Int64(i) * 1000))
            if let line = log.outcome(try failed(i, dead: i == 30, at: at), destination: "api", now: at) { lines.append(line) }
        }
        #expect(lines.isEmpty, "held back within the minute: \(lines)")
        let other = try #require(log.outcome(try failed(51, to: "mail", at: t0.adding(.seconds(30))), destination: "mail", now: t0.adding(.seconds(30))))
        #expect(other.hasPrefix("destination mail: "), "each destination has its own limit")
        let minute = t0.adding(.seconds(61))
        let next = try #require(log.outcome(try failed(52, attempts: 3, at: minute), destination: "api", now: minute))
        #expect(next.hasSuffix("(and since the last line: 48 more failed, 1 dead)"), "\(next)")
        let dead = t0.adding(.seconds(200))
        let gaveUp = try #require(log.outcome(try failed(53, attempts: 9, dead: true, at: dead), destination: "api", now: dead))
        #expect(gaveUp.contains(" dead after 9 attempts: remote: 503 Service Unavailable"), "\(gaveUp)")
        let back = try #require(log.outcome(try sent(54, at: t0.adding(.seconds(300))), destination: "api", now: t0.adding(.seconds(300))))
        #expect(back == "destination api: delivering again after 52 failures in 5 min, 2 dead")
        #expect(log.outcome(try sent(55, at: t0.adding(.seconds(301))), destination: "api", now: t0.adding(.seconds(301))) == nil)
        #expect(!(first + next + back).contains("\n"), "one line each")
    }
}

/// Durations in a sentence read as a person says them, two units at most.
@Suite struct HumanDurationTests {
    @Test func eachRangeReadsInItsUnits() {
        let cases: [(Int64, String)] = [
            (0, "0 ms"), (850, "850 ms"), (1000, "1 s"), (4200, "4.2 s"), (9999, "9.9 s"), (42_000, "42 s"),
            (60_000, "1 min"), (211_155, "3 min 31 s"), (3_600_000, "1 h"), (7_500_000, "2 h 5 min"),
            (86_400_000, "1 d"), (273_600_000, "3 d 4 h"),
        ]
        for (ms, text) in cases { #expect(HumanDuration.text(milliseconds: ms) == text, "\(ms) ms") }
    }
}
