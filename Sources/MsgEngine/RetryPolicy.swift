import MsgKit

/// When a failed message is tried again, and when it is given up (docs/DESIGN.md 6).
///
/// The delay after the n-th counted attempt is `base × factor^(n-1)`, capped, plus up to
/// `jitter` of itself at random. `unreachable` (offline) does not use up an attempt;
/// `rate_limited` waits what the destination asked, else four times the delay;
/// `rejected` is permanent: dead at once.
public struct RetryPolicy: Sendable, Equatable {
    public var base = MsgDuration.seconds(1)
    public var factor = 2.0
    public var cap = MsgDuration.seconds(30)
    /// The most extra delay, as a fraction of the delay (0.1: up to 10 %).
    public var jitter = 0.1
    /// Counted attempts before a message is dead.
    public var maxAttempts = 3

    public init() {}

    /// The longest wait a destination may ask for (`retry_after`); longer is taken as this.
    public static let longestRetryAfter = MsgDuration.seconds(86_400)

    /// A wait a destination asked for, as msg honours it: from none to a day. The
    /// value comes from the network (a receiver's ack, a Retry-After header).
    public static func honoured(_ retryAfter: MsgDuration) -> MsgDuration {
        MsgDuration(milliseconds: min(max(0, retryAfter.milliseconds), longestRetryAfter.milliseconds))
    }

    /// The delay before the next attempt after `attempts` counted attempts.
    /// `unit` is a random number in [0, 1) (injected, so tests are exact).
    public func delay(afterAttempts attempts: Int, unit: Double) -> MsgDuration {
        let exponent = Double(max(0, attempts - 1))
        var ms = Double(base.milliseconds)
        for _ in 0..<Int(exponent) where ms < Double(cap.milliseconds) { ms *= factor }
        ms = min(ms, Double(cap.milliseconds))
        ms += ms * jitter * min(max(unit, 0), 1)
        return MsgDuration(milliseconds: Int64(ms.rounded()))
    }

    /// Applies the outcome of one attempt to a message that is `sending`: `sent` or
    /// `delivered`, else `failed` with its error and next due time, or `dead`.
    /// - Throws: `invalidTransition` if the message is not sending.
    public func apply(_ outcome: DeliveryOutcome, to m: inout Message, now: Timestamp, unit: Double) throws(MsgError) {
        m.lease = nil
        switch outcome {
        case .delivered(let confirmed):
            m.attempts += 1
            m.nextAttemptAt = nil
            try m.transition(to: confirmed ? .delivered : .sent, event: confirmed ? "delivered" : "sent", at: now)
        case .failed(let error, let retryAfter):
            let failure = Message.Failure(error, at: now)
            m.lastError = failure
            if error.code != .unreachable { m.attempts += 1 }
            if error.code == .rejected || !error.code.isRetryable || m.attempts >= maxAttempts {
                m.nextAttemptAt = nil
                try m.transition(to: .dead, event: "dead", at: now, error: failure)
                return
            }
            var wait = delay(afterAttempts: max(m.attempts, 1), unit: unit)
            if error.code == .rateLimited {
                wait = retryAfter.map(Self.honoured) ?? MsgDuration(milliseconds: wait.milliseconds * 4)
            }
            m.nextAttemptAt = now.adding(wait)
            try m.transition(to: .failed, event: "failed", at: now, error: failure)
        }
    }
}
