import MsgEngine
import MsgKit
import MsgKitTesting
import Testing

@Suite struct RetryPolicyTests {
    let policy = RetryPolicy()

    @Test func delaysDoubleFromOneSecondUpToTheCapWithJitter() {
        #expect((1...7).map { policy.delay(afterAttempts: $0, unit: 0).milliseconds } == [1000, 2000, 4000, 8000, 16000, 30000, 30000])
        #expect(policy.delay(afterAttempts: 1, unit: 0.5).milliseconds == 1050, "up to 10% jitter")
        #expect(policy.delay(afterAttempts: 6, unit: 0.999).milliseconds == 32_997)
    }

    func sending() throws -> Message {
        var m = Fixtures.message(1)
        try m.transition(to: .sending, event: "attempt", at: Fixtures.t0)
        m.lease = .init(host: "h", pid: 1, until: Fixtures.t0.adding(.seconds(60)))
        return m
    }

    @Test func failuresCountAttemptsButUnreachableDoesNot() throws {
        let now = Fixtures.t0.adding(.seconds(1))
        var m = try sending()
        try policy.apply(.failed(MsgError(.timeout, "slow"), retryAfter: nil), to: &m, now: now, unit: 0)
        #expect(m.status == .failed && m.attempts == 1 && m.lease == nil)
        #expect(m.nextAttemptAt == now.adding(.seconds(1)))
        #expect(m.lastError?.code == "timeout" && m.lastError?.retryable == true)
        var offline = try sending()
        try policy.apply(.failed(MsgError(.unreachable, "offline"), retryAfter: nil), to: &offline, now: now, unit: 0)
        #expect(offline.status == .failed && offline.attempts == 0)
    }

    @Test func rejectedIsDeadAtOnceAndTheLastAttemptIsDead() throws {
        let now = Fixtures.t0
        var m = try sending()
        try policy.apply(.failed(MsgError(.rejected, "no such user"), retryAfter: nil), to: &m, now: now, unit: 0)
        #expect(m.status == .dead && m.attempts == 1 && m.nextAttemptAt == nil)
        var last = try sending()
        last.attempts = 2
        try policy.apply(.failed(MsgError(.remote, "500"), retryAfter: nil), to: &last, now: now, unit: 0)
        #expect(last.status == .dead && last.attempts == 3)
    }

    @Test func rateLimitedWaitsWhatTheDestinationAsks() throws {
        var m = try sending()
        try policy.apply(.failed(MsgError(.rateLimited, "slow down"), retryAfter: .seconds(42)), to: &m, now: Fixtures.t0, unit: 0)
        #expect(m.nextAttemptAt == Fixtures.t0.adding(.seconds(42)))
        var n = try sending()
        try policy.apply(.failed(MsgError(.rateLimited, "slow down"), retryAfter: nil), to: &n, now: Fixtures.t0, unit: 0)
        #expect(n.nextAttemptAt == Fixtures.t0.adding(.seconds(4)), "four times the delay")
    }

    @Test func deliveryIsSentOrDelivered() throws {
        var m = try sending()
        try policy.apply(.delivered(confirmed: false), to: &m, now: Fixtures.t0, unit: 0)
        #expect(m.status == .sent && m.attempts == 1 && m.lease == nil && m.history.last?.event == "sent")
        var c = try sending()
        try policy.apply(.delivered(confirmed: true), to: &c, now: Fixtures.t0, unit: 0)
        #expect(c.status == .delivered)
    }
}
