import MsgEngine
import MsgKit
import MsgKitTesting
import Testing

@Suite struct RetryPolicyTests {
    let policy = RetryPolicy()

    @Test func delaysDoubleFromOneSecondUpToAnHourWithJitter() {
        #expect((1...14).map { policy.delay(afterAttempts: $0, unit: 0).milliseconds / 1000 } == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 3600, 3600])
        #expect(policy.delay(afterAttempts: 1, unit: 0.5).milliseconds == 1050, "up to 10% jitter")
        #expect(policy.delay(afterAttempts: 20, unit: 0.999).milliseconds == 3_959_640)
        var short = RetryPolicy()
        short.cap = .seconds(30)
        #expect((5...7).map { short.delay(afterAttempts: $0, unit: 0).milliseconds } == [16000, 30000, 30000])
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
        #expect(m.lastError?.message == "no such user", "a rejection is not a giving up")
        var three = policy
        three.maxAttempts = 3
        var last = try sending()
        last.attempts = 2
        try three.apply(.failed(MsgError(.remote, "500"), retryAfter: nil), to: &last, now: now, unit: 0)
        #expect(last.status == .dead && last.attempts == 3)
        #expect(last.lastError?.message == "500; gave up after 3 attempts (max_attempts 3)")
    }

    /// By default an outbox rides out an outage: no count of attempts, five days
    /// from the first failure, then dead at the next failure.
    @Test func byDefaultAFailingMessageIsTriedForFiveDays() throws {
        var m = try sending()
        var now = Fixtures.t0
        for attempt in 1...40 {
            try policy.apply(.failed(MsgError(.remote, "503"), retryAfter: nil), to: &m, now: now, unit: 0)
            #expect(m.status == .failed && m.attempts == attempt)
            now = try #require(m.nextAttemptAt)
            try m.transition(to: .sending, event: "attempt", at: now)
        }
        #expect(RetryPolicy.Promise(of: m) == RetryPolicy.Promise(maxAttempts: 0, giveUpAt: Fixtures.t0.adding(.seconds(5 * 86_400))))
        let later = Fixtures.t0.adding(.seconds(5 * 86_400))
        try policy.apply(.failed(MsgError(.remote, "503"), retryAfter: nil), to: &m, now: later, unit: 0)
        #expect(m.status == .dead && m.attempts == 41)
        #expect(m.lastError?.message.hasPrefix("503; gave up at ") == true, "\(m.lastError?.message ?? "")")
    }

    /// What a message was promised at its first failure holds in a later run whose
    /// policy says otherwise, unless that run's flags override it.
    @Test func thePromiseIsKeptUnlessARunsFlagsSayOtherwise() throws {
        var strict = policy
        strict.maxAttempts = 2
        var m = try sending()
        try policy.apply(.failed(MsgError(.remote, "503"), retryAfter: nil), to: &m, now: Fixtures.t0, unit: 0)
        try m.transition(to: .sending, event: "attempt", at: Fixtures.t0.adding(.seconds(2)))
        try strict.apply(.failed(MsgError(.remote, "503"), retryAfter: nil), to: &m, now: Fixtures.t0.adding(.seconds(2)), unit: 0)
        #expect(m.status == .failed && m.attempts == 2, "promised no count at its first failure")
        strict.overrides.maxAttempts = true
        try m.transition(to: .sending, event: "attempt", at: Fixtures.t0.adding(.seconds(9)))
        try strict.apply(.failed(MsgError(.remote, "503"), retryAfter: nil), to: &m, now: Fixtures.t0.adding(.seconds(9)), unit: 0)
        #expect(m.status == .dead && RetryPolicy.Promise(of: m)?.maxAttempts == 2)
    }

    /// A draft may carry its own promise; the first matching destination section
    /// sets the policy of the rest.
    @Test func aRecordsPromiseAndDestinationSectionsAreHonoured() throws {
        var m = try sending()
        RetryPolicy.Promise(maxAttempts: 1, giveUpAt: Fixtures.t0.adding(.seconds(60))).write(into: &m)
        try policy.apply(.failed(MsgError(.timeout, "slow"), retryAfter: nil), to: &m, now: Fixtures.t0, unit: 0)
        #expect(m.status == .dead)
        var sections = policy
        var mail = RetryPolicy.Destination(pattern: "*@example.com")
        mail.maxAttempts = 1
        mail.base = .seconds(60)
        var other = RetryPolicy.Destination(pattern: "*")
        other.base = .seconds(7)
        sections.destinations = [mail, other]
        #expect(sections.resolved(for: "ann@example.com").maxAttempts == 1)
        #expect(sections.resolved(for: "ann@example.org").base == .seconds(7) && sections.resolved(for: "x").maxAttempts == 0)
        var n = try sending()
        n.to = "api.example.org"
        try sections.apply(.failed(MsgError(.remote, "503"), retryAfter: nil), to: &n, now: Fixtures.t0, unit: 0)
        #expect(n.nextAttemptAt == Fixtures.t0.adding(.seconds(7)))
    }

    @Test func rateLimitedWaitsWhatTheDestinationAsksAndCountsNoAttempt() throws {
        var m = try sending()
        try policy.apply(.failed(MsgError(.rateLimited, "slow down"), retryAfter: .seconds(42)), to: &m, now: Fixtures.t0, unit: 0)
        #expect(m.nextAttemptAt == Fixtures.t0.adding(.seconds(42)))
        #expect(m.status == .failed && m.attempts == 0, "a 429 never uses up an attempt")
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
