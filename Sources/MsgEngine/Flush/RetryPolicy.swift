#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// When a failed message is tried again, and when it is given up (docs/DESIGN.md 6).
///
/// The delay after the n-th counted attempt is `base × factor^(n-1)`, capped, plus up to
/// `jitter` of itself at random. `unreachable` (offline) and `rate_limited` (the
/// destination asked for time: 429, Retry-After) do not use up an attempt;
/// `rate_limited` waits what the destination asked, else four times the delay;
/// `rejected` is permanent: dead at once.
///
/// The defaults fit an outbox, which exists for the outage: a retryable failure is
/// tried again for five days (`giveUpAfter`, Postfix's `maximal_queue_lifetime`),
/// with a delay that doubles from a second to an hour (Postfix backs off to 4,000 s),
/// and no count of attempts of its own (`maxAttempts` 0).
///
/// What a message was promised is fixed at its first failure (``Promise``, kept in
/// that failure's history event as `max_attempts` and `give_up_at`, or given in its
/// draft), so
/// every later run, command and process honours the same budget whatever its own
/// settings; a run whose flags say otherwise (``overrides``) promises anew.
public struct RetryPolicy: Sendable, Equatable {
    public var base = MsgDuration.seconds(1)
    public var factor = 2.0
    public var cap = MsgDuration.seconds(3600)
    /// The most extra delay, as a fraction of the delay (0.1: up to 10 %).
    public var jitter = 0.1
    /// Counted attempts before a message is dead; 0: no count (the give-up age decides).
    public var maxAttempts = 0
    /// How long after its first failure a message is given up, at its next failure
    /// from then on (from the first failure, not its creation: a message scheduled
    /// for next month, or held for a week, has its five days when it is tried).
    public var giveUpAfter = MsgDuration.seconds(5 * 86_400)
    /// What this run's flags set (`--max-attempts`, `--give-up-after`): promised
    /// anew to every message it fails, instead of what the message was promised.
    public var overrides = Overrides()
    /// Per destination: the first whose recipient pattern matches a message's `to`
    /// sets its policy (the config file's `[destination PATTERN]` sections).
    public var destinations: [Destination] = []

    /// What a run's flags set, over the promise a message was given.
    public struct Overrides: Sendable, Equatable {
        public var maxAttempts = false
        public var giveUpAfter = false
        public init() {}
    }

    /// The policy of the messages whose recipient matches `pattern` (fnmatch(3), as `--to`).
    public struct Destination: Sendable, Equatable {
        public var pattern: String
        public var maxAttempts: Int?
        public var base: MsgDuration?
        public var cap: MsgDuration?
        public var giveUpAfter: MsgDuration?
        public init(pattern: String) { self.pattern = pattern }
    }

    /// The budget a message was promised: fixed once, in its record's history.
    ///
    /// Kept as two members (`max_attempts`, `give_up_at`) of the history event of
    /// the failure that made the promise, or of a draft (the record's own members,
    /// set at enqueue): never by changing what the record says, which the ledger
    /// holds to (docs/DESIGN.md 10), but by adding to its history, as every change is.
    public struct Promise: Sendable, Equatable {
        /// Counted attempts before it is dead; 0: no count.
        public var maxAttempts: Int
        /// After this its next failure makes it dead.
        public var giveUpAt: Timestamp

        public static let maxAttemptsKey = "max_attempts"
        public static let giveUpAtKey = "give_up_at"

        public init(maxAttempts: Int, giveUpAt: Timestamp) {
            self.maxAttempts = maxAttempts
            self.giveUpAt = giveUpAt
        }

        /// What `m` was promised last (its history, newest first, then its draft), if anything.
        public init?(of m: Message) {
            for e in m.history.reversed() where !e.extra.isEmpty {
                if let p = Promise(members: e.extra) {
                    self = p
                    return
                }
            }
            guard let p = Promise(members: m.extra) else { return nil }
            self = p
        }

        /// The promise `members` hold, when they hold both parts.
        init?(members: [JSONValue.Member]) {
            guard let attempts = members.first(where: { $0.key == Self.maxAttemptsKey })?.value.intValue, attempts >= 0,
                  let text = members.first(where: { $0.key == Self.giveUpAtKey })?.value.stringValue,
                  let at = Timestamp(rfc3339: text) else { return nil }
            self.init(maxAttempts: attempts, giveUpAt: at)
        }

        /// Records it in `m`'s newest history event (the failure that makes it).
        public func record(in m: inout Message) {
            guard let last = m.history.indices.last else { return }
            m.history[last].extra.removeAll { $0.key == Self.maxAttemptsKey || $0.key == Self.giveUpAtKey }
            m.history[last].extra.append(.init(Self.maxAttemptsKey, .number(String(maxAttempts))))
            m.history[last].extra.append(.init(Self.giveUpAtKey, .string(giveUpAt.description)))
        }

        /// Writes it as `m`'s own members, as a draft may give it (`msg compose`).
        public func write(into m: inout Message) {
            m.extra.removeAll { $0.key == Self.maxAttemptsKey || $0.key == Self.giveUpAtKey }
            m.extra.append(.init(Self.maxAttemptsKey, .number(String(maxAttempts))))
            m.extra.append(.init(Self.giveUpAtKey, .string(giveUpAt.description)))
        }
    }

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

    /// The policy for messages to `to`: the first destination section that matches.
    public func resolved(for to: String) -> RetryPolicy {
        guard let d = destinations.first(where: { fnmatch($0.pattern, to, 0) == 0 }) else { return self }
        var p = self
        p.destinations = []
        if let v = d.maxAttempts { p.maxAttempts = v }
        if let v = d.base { p.base = v }
        if let v = d.cap { p.cap = v }
        if let v = d.giveUpAfter { p.giveUpAfter = v }
        return p
    }

    /// What `m` was promised, or what this policy promises it at `now` (its first
    /// failure); a run's flags replace the part they set.
    public func promise(for m: Message, now: Timestamp) -> Promise {
        let mine = Promise(maxAttempts: maxAttempts, giveUpAt: now.adding(giveUpAfter))
        guard var kept = Promise(of: m) else { return mine }
        if overrides.maxAttempts { kept.maxAttempts = mine.maxAttempts }
        if overrides.giveUpAfter { kept.giveUpAt = mine.giveUpAt }
        return kept
    }

    /// When `m` gives up if it keeps failing, for a person (`msg queue show`): what
    /// it was promised, else what this policy will promise it; nil once it is done.
    public func givingUp(_ m: Message) -> String? {
        guard [.queued, .failed, .sending, .held].contains(m.status) else { return nil }
        let count = { (n: Int) in n > 0 ? " or at attempt \(n), whichever comes first" : "" }
        if let p = Promise(of: m) { return "at \(p.giveUpAt)\(count(p.maxAttempts)), if it is still failing (promised)" }
        let p = resolved(for: m.to)
        return "\(p.giveUpAfter) after its first failure\(count(p.maxAttempts)), if it is still failing"
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
            let policy = destinations.isEmpty ? self : resolved(for: m.to)
            var failure = Message.Failure(error, at: now)
            if error.code != .unreachable && error.code != .rateLimited { m.attempts += 1 }
            let kept = Promise(of: m)
            let promise = policy.promise(for: m, now: now)
            var givenUp: String?
            if error.code.isRetryable && error.code != .rejected {
                if promise.maxAttempts > 0 && m.attempts >= promise.maxAttempts {
                    givenUp = "gave up after \(m.attempts) attempt\(m.attempts == 1 ? "" : "s") (max_attempts \(promise.maxAttempts))"
                } else if now >= promise.giveUpAt {
                    givenUp = "gave up at \(promise.giveUpAt) (give_up_at), \(m.attempts) attempt\(m.attempts == 1 ? "" : "s") counted"
                }
            }
            if let givenUp { failure.message += "; " + givenUp }
            m.lastError = failure
            if error.code == .rejected || !error.code.isRetryable || givenUp != nil {
                m.nextAttemptAt = nil
                try m.transition(to: .dead, event: "dead", at: now, error: failure)
                if promise != kept && givenUp != nil { promise.record(in: &m) }
                return
            }
            var wait = policy.delay(afterAttempts: max(m.attempts, 1), unit: unit)
            if error.code == .rateLimited {
                wait = retryAfter.map(Self.honoured) ?? MsgDuration(milliseconds: wait.milliseconds * 4)
            }
            m.nextAttemptAt = now.adding(wait)
            try m.transition(to: .failed, event: "failed", at: now, error: failure)
            // Made at the first failure (or anew by a run's flags): kept in its event.
            if promise != kept { promise.record(in: &m) }
        }
    }
}
