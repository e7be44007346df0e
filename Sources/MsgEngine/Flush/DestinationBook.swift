import MsgKit

/// The rules of a destination, in their order, in one place (docs/DESIGN.md 6):
/// may this destination send now, and if not, why and until when. The claim's
/// planner, the delivery workers, `msg destinations` and `msg queue show` all ask
/// it, so the rules cannot drift apart.
///
/// The order, each rule holding the destination before the next is asked:
/// 1. *suspended*: an operator suspended it (`msg destinations suspend`), until
///    resumed or the suspension's end;
/// 2. *in flight*: another message of it is `sending` (one at a time, FIFO);
/// 3. *paused*: it asked for a pause (`rate_limited` with `retry_after`);
/// 4. *breaker*: open until its cool-down ends; then half-open, one probe at a
///    time (a probe holds it only while in flight with a live sender);
/// 5. *throttle*: its token bucket is empty until the next token.
/// A message's own times (expiry, `not_before`, backoff) come before all of them.
public struct DestinationBook: Sendable {
    public let rules: DeliveryRules

    public init(rules: DeliveryRules) { self.rules = rules }

    /// The book of destination `key`: its section's throttle and breaker.
    public func of(_ key: String) -> DestinationBook {
        rules.destinations.isEmpty ? self : DestinationBook(rules: rules.resolved(for: key))
    }

    /// Why a destination's messages wait now.
    public enum Hold: Sendable, Equatable {
        /// Suspended by hand; `until` nil: until resumed.
        case suspended(until: Timestamp?)
        case busy
        case paused(until: Timestamp)
        case open(until: Timestamp)
        case probing
        case throttled(until: Timestamp)

        /// When the hold ends by itself; nil when another event ends it (an outcome).
        public var until: Timestamp? {
            switch self {
            case .paused(let t), .open(let t), .throttled(let t): t
            case .suspended(let t): t
            case .busy, .probing: nil
            }
        }

        /// Whether what waits for the destination goes back to the queue untouched
        /// (its breaker opened, or it asked for a pause) rather than waiting in a run.
        public var putsBack: Bool {
            switch self {
            case .open, .paused, .suspended: true
            default: false
            }
        }
    }

    /// What the rules say for a destination.
    public enum Verdict: Sendable, Equatable {
        /// It may send; `probe`: the message is the half-open breaker's probe.
        case send(probe: Bool)
        case hold(Hold)
    }

    /// The rules in order for a destination in `state` at `now`. `busy`: another of
    /// its messages is in flight; `probeInFlight`: the probe `state` names is in
    /// flight with a live sender. Reads only: ``take(_:probe:id:now:)`` commits.
    public func verdict(_ state: DestinationState, busy: Bool, probeInFlight: Bool, now: Timestamp) -> Verdict {
        if let suspension = state.suspension, suspension.holds(at: now) { return .hold(.suspended(until: suspension.until)) }
        if busy { return .hold(.busy) }
        if !rules.overridesWaits, let until = state.pausedUntil, until > now { return .hold(.paused(until: until)) }
        var probe = false
        switch state.breaker(at: now) {
        case .closed: break
        case _ where rules.overridesWaits: break
        case .open(let until): return .hold(.open(until: until))
        case .halfOpen(let id):
            if id != nil && probeInFlight { return .hold(.probing) }
            probe = true
        }
        if let rate = rules.rate {
            var s = state
            if let next = s.takeToken(now: now, rate: rate) { return .hold(.throttled(until: next)) }
        }
        return .send(probe: probe)
    }

    /// Takes one message for the destination, as a ``Verdict/send(probe:)``
    /// allowed: a token from its bucket, the probe's mark, an ended pause forgotten.
    public func take(_ state: inout DestinationState, probe: Bool, id: String, now: Timestamp) {
        if let until = state.pausedUntil, until <= now { state.pausedUntil = nil }
        if let suspension = state.suspension, !suspension.holds(at: now) { state.suspension = nil }
        if let rate = rules.rate {
            state.rate = rate
            _ = state.takeToken(now: now, rate: rate)
        }
        if probe { state.probe = id }
    }

    /// The throttle's bucket when the destination waited for a token: kept, so every
    /// process sees when the next one comes.
    public func waited(_ state: inout DestinationState, now: Timestamp) {
        guard let rate = rules.rate else { return }
        state.rate = rate
        _ = state.takeToken(now: now, rate: rate)
    }

    /// Something an outcome teaches about its destination.
    public enum Lesson: Sendable, Equatable {
        case succeeded
        case failed(Message.Failure)
        case rejected(Message.Failure)
        case paused(until: Timestamp)
        /// The probe came back (its outcome is the lesson that follows).
        case probeReturned(id: String)
    }

    /// The lessons of one outcome of message `id`.
    public func lessons(_ outcome: DeliveryOutcome, id: String, probe: Bool, now: Timestamp) -> [Lesson] {
        var out: [Lesson] = probe ? [.probeReturned(id: id)] : []
        switch outcome {
        case .delivered: out.append(.succeeded)
        case .failed(let error, let retryAfter):
            let failure = Message.Failure(error, at: now)
            if error.code == .rateLimited, let retryAfter { out.append(.paused(until: now.adding(RetryPolicy.honoured(retryAfter)))) }
            out.append(error.code.isRetryable ? .failed(failure) : .rejected(failure))
        }
        return out
    }

    /// What a lesson changed that a user is told: one stderr line, one event.
    public struct Notice: Sendable, Equatable {
        public var line: String
        public var event: DeliveryEvent
    }

    /// Applies a lesson to a destination's state.
    /// - Returns: a notice when the breaker opened or closed.
    public func learn(_ lesson: Lesson, into s: inout DestinationState, key: String, now: Timestamp) -> Notice? {
        switch lesson {
        case .succeeded:
            if s.succeeded() == .closed {
                return Notice(line: "destination \(key): circuit closed, a message went out",
                              event: DeliveryEvent(.breakerClosed, at: now, destination: key))
            }
        case .failed(let failure):
            if case .opened(let until, let failures)? = s.failed(failure, now: now, rules: rules) {
                let length = MsgDuration(milliseconds: until.milliseconds - now.milliseconds)
                return Notice(line: "destination \(key): circuit open for \(length) after \(failures) failures in a row (last: \(failure.code): \(failure.message)); its messages wait, no attempt counted",
                              event: DeliveryEvent(.breakerOpened, at: now, destination: key, attempts: failures, error: failure, until: until))
            }
        case .rejected(let failure): s.rejected(failure)
        case .paused(let until): s.pause(until: until)
        case .probeReturned(let id): if s.probe == id { s.probe = nil }
        }
        return nil
    }

    /// Why `m` is not going out now, or nil when it may (or is not waiting at all):
    /// its own times first (`held`, `expired`, `not_before`, `backoff`), then the
    /// destination's rules (`suspended`, `in_flight`, `paused`, `breaker`, `throttled`).
    public func why(_ m: Message, key: String, state: DestinationState?, busy: Bool, probeInFlight: Bool, now: Timestamp) -> String? {
        switch m.status {
        case .held: return "held: msg queue release sends it"
        case .queued, .failed: break
        default: return nil
        }
        if let expires = m.expiresAt, expires <= now { return "expired at \(expires): the next flush marks it dead" }
        if let t = m.notBefore, t > now { return "not_before: not sent before \(t)" }
        if let t = m.nextAttemptAt, t > now { return "backoff: next attempt at \(t) (msg retry --now sends it now)" }
        // Looking from outside a run: a throttle is the one the state was kept with.
        var book = self
        if book.rules.rate == nil, let rate = state?.rate {
            var rules = book.rules
            rules.rate = rate
            book = DestinationBook(rules: rules)
        }
        guard case .hold(let hold) = book.verdict(state ?? DestinationState(), busy: busy, probeInFlight: probeInFlight, now: now) else { return nil }
        switch hold {
        case .suspended(let until):
            let reason = state?.suspension.map { $0.reason.isEmpty ? "" : " (\($0.reason))" } ?? ""
            return "suspended: \(key) was suspended by hand\(reason) " + (until.map { "until \($0)" } ?? "until msg destinations resume")
        case .busy: return "in_flight: another message to \(key) is being sent; one goes at a time"
        case .paused(let until): return "paused: \(key) asked to wait until \(until)"
        case .open(let until): return "breaker: \(key) is open until \(until) after \(state?.failures ?? 0) failures in a row"
        case .probing: return "breaker: a message is probing whether \(key) is back"
        case .throttled(let next): return "throttled: \(key) may take its next message at \(next) (\(state?.rate?.description ?? rules.rate?.description ?? ""))"
        }
    }

    /// A message past its expiry: `dead`, with an `expired` event and error, never
    /// attempted (the claim, and a worker again just before delivery).
    public static func expire(_ m: Message, now: Timestamp) throws(MsgError) -> Message {
        var x = m
        let failure = Message.Failure(code: "expired", message: "expired at \(m.expiresAt.map(\.description) ?? "?") before it could be sent",
                                      retryable: false, at: now)
        x.lease = nil
        x.nextAttemptAt = nil
        x.lastError = failure
        try x.transition(to: .dead, event: "expired", at: now, error: failure)
        return x
    }
}
