import MsgKit

/// One claim of a flush, decided inside the store's atomic step (``ClaimPlanner``):
/// per destination, FIFO order with one message in flight, the breaker, a pause the
/// destination asked for, the token bucket, and expiry.
final class DestinationPlanner: ClaimPlanner {
    /// Something learnt from an outcome, applied to the stored state at the next claim.
    enum Event: Sendable, Equatable {
        case succeeded
        case failed(Message.Failure)
        case rejected(Message.Failure)
        case paused(until: Timestamp)
        case probeReturned
    }

    /// Why a destination's messages were left in the queue this time.
    enum Hold: Sendable, Equatable {
        case busy
        case open(until: Timestamp)
        case probing
        case paused(until: Timestamp)
        case throttled(until: Timestamp)
    }

    private let rules: DeliveryRules
    private let now: Timestamp
    private let isOwn: (String) -> Bool
    /// How many more messages of a key may be taken; nil: no bound.
    private let room: ((String) -> Int)?
    private let skip: (Message) -> Bool
    private let prepare: (Message) throws(MsgError) -> Message
    private let probeLease: Timestamp
    private var events: [(key: String, event: Event)]

    private(set) var states: [String: DestinationState] = [:]
    private var stored: [String: DestinationState] = [:]
    private var changed: Set<String> = []
    private var busyKeys: Set<String> = []
    private var takenPerKey: [String: Int] = [:]
    private(set) var held: [String: Hold] = [:]
    /// Per held key, the messages this claim read and left for it.
    private(set) var heldCount: [String: Int] = [:]
    /// The earliest time a held destination may go again within this run (a token, a pause's end).
    private(set) var wake: Timestamp?
    /// Lines for stderr: breakers opened and closed.
    private(set) var notices: [String] = []
    /// Keys whose message taken now is the half-open probe.
    private(set) var probes: Set<String> = []

    init(rules: DeliveryRules, now: Timestamp, isOwn: @escaping (String) -> Bool, events: [(key: String, event: Event)],
         probeLease: Timestamp, room: ((String) -> Int)?,
         skip: @escaping (Message) -> Bool, prepare: @escaping (Message) throws(MsgError) -> Message) {
        self.rules = rules
        self.now = now
        self.isOwn = isOwn
        self.events = events
        self.probeLease = probeLease
        self.room = room
        self.skip = skip
        self.prepare = prepare
    }

    func begin(states stored: [String: String]) throws(MsgError) {
        states = stored.mapValues { DestinationState(text: $0) }
        self.stored = states
        for (key, event) in events {
            var s = states[key] ?? DestinationState()
            if let line = Self.apply(event, to: &s, key: key, now: now, rules: rules) { notices.append(line) }
            states[key] = s
            changed.insert(key)
        }
        events = []
    }

    /// Applies one outcome's event to a state. - Returns: a line for stderr, if any.
    static func apply(_ event: Event, to s: inout DestinationState, key: String, now: Timestamp, rules: DeliveryRules) -> String? {
        switch event {
        case .succeeded:
            if s.succeeded() == .closed { return "destination \(key): circuit closed, a message went out" }
        case .failed(let failure):
            if case .opened(let until, let failures)? = s.failed(failure, now: now, rules: rules) {
                let length = MsgDuration(milliseconds: until.milliseconds - now.milliseconds)
                return "destination \(key): circuit open for \(length) after \(failures) failures in a row (last: \(failure.code): \(failure.message)); its messages wait, no attempt counted"
            }
        case .rejected(let failure): s.rejected(failure)
        case .paused(let until): s.pause(until: until)
        case .probeReturned: s.probeUntil = nil
        }
        return nil
    }

    func busy(id: String, to: String, record: () -> Message) {
        if isOwn(id) { return }
        busyKeys.insert(rules.key == .recipient ? to : rules.key.of(record()))
    }

    func consider(_ m: Message) throws(MsgError) -> ClaimAnswer {
        if skip(m) { return .skip }
        if let expires = m.expiresAt, expires <= now { return .take(try Self.expire(m, now: now)) }
        let key = rules.key.of(m)
        // Each lookup only when its table has anything: most claims find them all empty.
        if !held.isEmpty, held[key] != nil {
            heldCount[key, default: 0] += 1
            return .skip
        }
        if !busyKeys.isEmpty, busyKeys.contains(key) { return hold(key, .busy) }
        var taken = 0
        if let room {
            taken = takenPerKey[key] ?? 0
            if taken >= room(key) { return .skip }
        }
        guard !states.isEmpty || rules.rate != nil, var s = states[key] else {
            // Nothing known about this destination: the common case, kept cheap.
            if let rate = rules.rate {
                var fresh = DestinationState()
                fresh.rate = rate
                _ = fresh.takeToken(now: now, rate: rate)
                states[key] = fresh
                changed.insert(key)
            }
            if room != nil { takenPerKey[key] = taken + 1 }
            return .take(try prepare(m))
        }
        if let until = s.pausedUntil {
            if until > now { return hold(key, .paused(until: until)) }
            s.pausedUntil = nil
            changed.insert(key)
        }
        var probe = false
        switch s.breaker(at: now) {
        case .closed: break
        case .open(let until): return hold(key, .open(until: until))
        case .halfOpen(probing: true): return hold(key, .probing)
        case .halfOpen(probing: false): probe = true
        }
        if let rate = rules.rate {
            s.rate = rate
            if let next = s.takeToken(now: now, rate: rate) {
                states[key] = s
                changed.insert(key)
                return hold(key, .throttled(until: next))
            }
            changed.insert(key)
        }
        if probe {
            s.probeUntil = probeLease
            probes.insert(key)
            held[key] = .probing
            changed.insert(key)
        }
        states[key] = s
        if room != nil { takenPerKey[key] = taken + 1 }
        return .take(try prepare(m))
    }

    private func hold(_ key: String, _ why: Hold) -> ClaimAnswer {
        held[key] = why
        heldCount[key, default: 0] += 1
        switch why {
        case .throttled(let until), .paused(let until):
            wake = min(wake ?? until, until)
        default: break
        }
        return .skip
    }

    func finish() -> [String: String?] {
        var out: [String: String?] = [:]
        for key in changed {
            var s = states[key] ?? DestinationState()
            s.dropFullBucket(now: now, rate: rules.rate)
            states[key] = s
            let before = stored[key]
            if s.isEmpty {
                if before != nil { out[key] = .some(nil) }
            } else if before != s {
                out[key] = .some(s.text)
            }
        }
        return out
    }

    /// `m` past its expiry: dead, with an `expired` event and error, never attempted.
    static func expire(_ m: Message, now: Timestamp) throws(MsgError) -> Message {
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
