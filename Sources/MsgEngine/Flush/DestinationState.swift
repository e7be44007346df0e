#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// What msg knows about one destination (docs/DESIGN.md 6): a suspension an operator
/// made, its circuit breaker, a pause the destination asked for, and its token
/// bucket. Stored per key as the text of a small JSON object, in a claim's step
/// (``Store/claimSession(_:)``), so every process on the store, and the next cron
/// run, sees it.
public struct DestinationState: Sendable, Equatable {
    /// Retryable failures in a row.
    public var failures = 0
    /// How many times the breaker opened in a row (the cool-down grows with it).
    public var opens = 0
    /// Open until then; half-open after it, until a probe succeeds.
    public var openUntil: Timestamp?
    /// The id of the message sent as the half-open probe. It holds the destination
    /// only while it is in flight with a live sender (``DestinationBook``): a probe
    /// whose sender was killed ends when that is seen, not at its lease's end.
    public var probe: String?
    /// The destination asked to wait until then (`rate_limited` with `retry_after`).
    public var pausedUntil: Timestamp?
    /// Tokens in the bucket (thousandths) at ``tokensAt``; nil: full.
    public var milliTokens: Int64?
    public var tokensAt: Timestamp?
    /// The throttle the bucket was filled at, kept with it so `msg destinations` and
    /// `msg queue show` can tell when the next token comes.
    public var rate: Rate?
    /// The last failure seen, while there are failures.
    public var lastError: Message.Failure?
    /// Suspended by hand (`msg destinations suspend`), until resumed or its end.
    public var suspension: Suspension?

    /// A destination an operator stopped: since when, until when (nil: until
    /// `msg destinations resume`), and why.
    public struct Suspension: Sendable, Equatable {
        public var since: Timestamp
        public var until: Timestamp?
        public var reason: String

        public init(since: Timestamp, until: Timestamp?, reason: String) {
            self.since = since
            self.until = until
            self.reason = reason
        }

        /// Whether it still holds at `now`.
        public func holds(at now: Timestamp) -> Bool { until.map { $0 > now } ?? true }
    }

    public init() {}

    /// Nothing worth keeping: the row is removed.
    public var isEmpty: Bool { self == DestinationState() }

    /// Breaker as seen at `now`.
    public enum Breaker: Sendable, Equatable {
        case closed
        case open(until: Timestamp)
        /// The cool-down is over: one message may probe; `probe` is the one sent, if
        /// any (whether it still holds the destination is ``DestinationBook``'s call).
        case halfOpen(probe: String?)
    }

    public func breaker(at now: Timestamp) -> Breaker {
        guard let openUntil else { return .closed }
        if openUntil > now { return .open(until: openUntil) }
        return .halfOpen(probe: probe)
    }

    // MARK: The token bucket

    /// Takes one token when there is one at `now`.
    /// - Returns: nil when taken, else when the next token comes.
    public mutating func takeToken(now: Timestamp, rate: Rate) -> Timestamp? {
        let full = Int64(rate.burst) * 1000
        var level = full
        if let milliTokens, let tokensAt {
            let elapsed = max(0, now.milliseconds - tokensAt.milliseconds)
            level = min(full, milliTokens + elapsed * 1000 / rate.periodMilliseconds * Int64(rate.count))
        }
        guard level >= 1000 else {
            let missing = 1000 - level
            let wait = (missing * rate.periodMilliseconds + Int64(rate.count) * 1000 - 1) / (Int64(rate.count) * 1000)
            milliTokens = level
            tokensAt = now
            return now.adding(MsgDuration(milliseconds: max(1, wait)))
        }
        milliTokens = level - 1000
        tokensAt = now
        return nil
    }

    /// When the next token comes, by the stored rate; nil when one is there (or no throttle).
    public func nextToken(at now: Timestamp) -> Timestamp? {
        guard let rate else { return nil }
        var copy = self
        return copy.takeToken(now: now, rate: rate)
    }

    /// Forgets a bucket that has refilled by `now` (so an idle destination keeps no row).
    public mutating func dropFullBucket(now: Timestamp, rate: Rate?) {
        guard let milliTokens, let tokensAt else { return }
        guard let rate else {
            self.milliTokens = nil
            self.tokensAt = nil
            self.rate = nil
            return
        }
        let elapsed = max(0, now.milliseconds - tokensAt.milliseconds)
        if milliTokens + elapsed * 1000 / rate.periodMilliseconds * Int64(rate.count) >= Int64(rate.burst) * 1000 {
            self.milliTokens = nil
            self.tokensAt = nil
            self.rate = nil
        }
    }

    // MARK: Outcomes

    /// What an outcome changed that a user is told about (one stderr line each).
    public enum Notice: Sendable, Equatable {
        case opened(until: Timestamp, failures: Int)
        case closed
    }

    /// A message went out: the breaker closes.
    public mutating func succeeded() -> Notice? {
        let wasOpen = openUntil != nil
        failures = 0
        opens = 0
        openUntil = nil
        probe = nil
        lastError = nil
        return wasOpen ? .closed : nil
    }

    /// A retryable failure: after `rules.breakerThreshold` in a row the breaker opens;
    /// a failed probe opens it again for longer.
    public mutating func failed(_ failure: Message.Failure, now: Timestamp, rules: DeliveryRules) -> Notice? {
        failures += 1
        lastError = failure
        let probeFailed = openUntil.map { $0 <= now } ?? false
        guard rules.breakerThreshold > 0, probeFailed || (openUntil == nil && failures >= rules.breakerThreshold) else { return nil }
        opens += 1
        let until = now.adding(rules.coolDown(opens: opens))
        openUntil = until
        probe = nil
        return .opened(until: until, failures: failures)
    }

    /// A permanent failure (the message's fault, not the destination's): kept for display.
    public mutating func rejected(_ failure: Message.Failure) {
        lastError = failure
    }

    /// The destination asked for a pause.
    public mutating func pause(until: Timestamp) {
        pausedUntil = max(pausedUntil ?? until, until)
    }
}

/// A throttle: `count` messages per period, in bursts of up to `burst`.
public struct Rate: Sendable, Equatable, CustomStringConvertible {
    public var count: Int
    public var periodMilliseconds: Int64
    public var burst: Int

    public init(count: Int, periodMilliseconds: Int64, burst: Int) {
        self.count = count
        self.periodMilliseconds = periodMilliseconds
        self.burst = burst
    }

    /// Reads `10/s`, `600/m` or `5000/h`.
    /// - Throws: `usage` saying the form.
    public init(parsing text: String, burst: Int? = nil) throws(MsgError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        let periods: [Substring: Int64] = ["s": 1000, "m": 60_000, "h": 3_600_000]
        guard parts.count == 2, let n = Int(parts[0]), n > 0, n <= 1_000_000, let period = periods[parts[1]] else {
            throw MsgError(.usage, "invalid rate '\(text)': expected messages per period, such as 10/s, 600/m or 5000/h")
        }
        count = n
        periodMilliseconds = period
        self.burst = max(1, burst ?? 1)
    }

    public var description: String {
        let unit = periodMilliseconds == 1000 ? "s" : periodMilliseconds == 60_000 ? "m" : "h"
        return "\(count)/\(unit)" + (burst > 1 ? ", burst \(burst)" : "")
    }
}

/// How a flush treats destinations: the key, the throttle, the breaker.
public struct DeliveryRules: Sendable, Equatable {
    public var key = DestinationKey.recipient
    /// Per destination; nil: no throttle.
    public var rate: Rate?
    /// Retryable failures in a row that open a destination's breaker; 0: never.
    public var breakerThreshold = 5
    /// The first cool-down; each further opening in a row doubles it, up to ``coolDownCap``.
    public var coolDown = MsgDuration.seconds(30)
    public var coolDownCap = MsgDuration.seconds(600)
    /// Send even to a destination that asked for a pause or whose breaker is open
    /// (`retry --now`: an operator's override); both stay for every other run, and
    /// the outcome teaches the breaker as any other.
    public var overridesWaits = false
    /// Why this run sends (`retry --reason`), kept in each attempt's history event.
    public var reason: String?
    /// Per destination: the first whose pattern matches a destination and sets a
    /// rule sets it (the config file's `[destination PATTERN]` sections).
    public var destinations: [Destination] = []

    /// The throttle and breaker of the destinations matching `pattern` (fnmatch(3)).
    public struct Destination: Sendable, Equatable {
        public var pattern: String
        public var rate: Rate?
        public var breakerThreshold: Int?
        public var coolDown: MsgDuration?
        public var coolDownCap: MsgDuration?
        public init(pattern: String) { self.pattern = pattern }
    }

    public init() {}

    /// Whether any destination is throttled.
    public var hasRate: Bool { rate != nil || destinations.contains { $0.rate != nil } }

    /// The rules of destination `key`: the first section matching it that sets any.
    public func resolved(for key: String) -> DeliveryRules {
        guard !destinations.isEmpty, let d = destinations.first(where: { fnmatch($0.pattern, key, 0) == 0 }) else { return self }
        var r = self
        r.destinations = []
        if let v = d.rate { r.rate = v }
        if let v = d.breakerThreshold { r.breakerThreshold = v }
        if let v = d.coolDown { r.coolDown = v }
        if let v = d.coolDownCap { r.coolDownCap = v }
        return r
    }

    public func coolDown(opens: Int) -> MsgDuration {
        var ms = coolDown.milliseconds
        for _ in 1..<max(1, opens) where ms < coolDownCap.milliseconds { ms *= 2 }
        return MsgDuration(milliseconds: min(ms, max(coolDownCap.milliseconds, coolDown.milliseconds)))
    }
}

extension DestinationState {
    /// The stored text: a JSON object of whole numbers (milliseconds) and strings.
    public var text: String {
        var w = JSONWriter()
        var first = true
        func key(_ k: StaticString) {
            w.key(k, first: first)
            first = false
        }
        w.raw("{")
        if failures > 0 { key("failures"); w.int(failures) }
        if opens > 0 { key("opens"); w.int(opens) }
        if let openUntil { key("open_until"); w.int(Int(openUntil.milliseconds)) }
        if let probe { key("probe"); w.string(probe) }
        if let pausedUntil { key("paused_until"); w.int(Int(pausedUntil.milliseconds)) }
        if let milliTokens, let tokensAt {
            key("milli_tokens"); w.int(Int(milliTokens))
            key("tokens_at"); w.int(Int(tokensAt.milliseconds))
        }
        if let rate {
            key("rate"); w.int(rate.count)
            key("period_ms"); w.int(Int(rate.periodMilliseconds))
            key("burst"); w.int(rate.burst)
        }
        if let lastError {
            key("error_code"); w.string(lastError.code)
            key("error_message"); w.string(lastError.message)
            key("error_at"); w.int(Int(lastError.at.milliseconds))
        }
        if let suspension {
            key("suspended_at"); w.int(Int(suspension.since.milliseconds))
            if let until = suspension.until { key("suspended_until"); w.int(Int(until.milliseconds)) }
            key("suspend_reason"); w.string(suspension.reason)
        }
        w.raw("}")
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// Reads stored text; text that does not read is an empty state (it only delays or
    /// throttles, so forgetting it loses no message).
    public init(text: String) {
        self.init()
        guard let v = try? JSONParser.parse(text) else { return }
        func time(_ k: String) -> Timestamp? { v[k]?.intValue.map { Timestamp(milliseconds: Int64($0)) } }
        failures = v["failures"]?.intValue ?? 0
        opens = v["opens"]?.intValue ?? 0
        openUntil = time("open_until")
        probe = v["probe"]?.stringValue
        pausedUntil = time("paused_until")
        if let t = v["milli_tokens"]?.intValue, let at = time("tokens_at") {
            milliTokens = Int64(t)
            tokensAt = at
        }
        if let n = v["rate"]?.intValue, let period = v["period_ms"]?.intValue, let burst = v["burst"]?.intValue, n > 0, period > 0 {
            rate = Rate(count: n, periodMilliseconds: Int64(period), burst: max(1, burst))
        }
        if let code = v["error_code"]?.stringValue, let at = time("error_at") {
            lastError = Message.Failure(code: code, message: v["error_message"]?.stringValue ?? "", retryable: true, at: at)
        }
        if let since = time("suspended_at") {
            suspension = Suspension(since: since, until: time("suspended_until"), reason: v["suspend_reason"]?.stringValue ?? "")
        }
    }
}
