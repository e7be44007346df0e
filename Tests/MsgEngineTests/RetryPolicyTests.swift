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

@Suite struct SHA256Tests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func knownVectors(input: String, digest: String) {
        var h = SHA256()
        h.update(Array(input.utf8))
        #expect(h.hexDigest() == digest)
    }

    @Test func aMillionAsInUnevenPieces() {
        var h = SHA256()
        var left = 1_000_000
        var size = 1
        while left > 0 {
            let n = min(size, left)
            h.update([UInt8](repeating: UInt8(ascii: "a"), count: n))
            left -= n
            size = size * 3 % 1000 + 1
        }
        #expect(h.hexDigest() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}
