import MsgKit

/// What `msg destinations` and `msg queue show` say about destinations: their
/// stored state (breaker, pause, throttle, last error) with their waiting messages.
public struct Destinations {
    /// One destination as listed.
    public struct Entry: Sendable {
        public var key: String
        public var state: DestinationState
        public var queued = 0
        public var failed = 0
        public var sending = 0
    }

    private let store: any Store
    private let key: DestinationKey

    public init(store: any Store, key: DestinationKey = .recipient) {
        self.store = store
        self.key = key
    }

    /// Every destination with a stored state or a waiting message, by key.
    /// - Throws: store errors.
    public func list() throws(MsgError) -> [Entry] {
        var entries: [String: Entry] = [:]
        for (k, text) in try store.destinationStates() { entries[k] = Entry(key: k, state: DestinationState(text: text)) }
        try store.list(Query(statuses: [.queued, .failed, .sending])) { (r) throws(MsgError) -> Bool in
            let m = r.message
            let k = key.of(m)
            var e = entries[k] ?? Entry(key: k, state: DestinationState())
            switch m.status {
            case .queued: e.queued += 1
            case .failed: e.failed += 1
            default: e.sending += 1
            }
            entries[k] = e
            return true
        }
        return entries.values.sorted { $0.key < $1.key }
    }

    /// The entry as a JSON object: `destination`, `breaker`, the times, counts, `last_error`.
    public static func json(_ e: Entry, now: Timestamp) -> JSONValue {
        var members: [JSONValue.Member] = [.init("destination", .string(e.key))]
        func time(_ name: String, _ t: Timestamp?) { if let t { members.append(.init(name, .string(t.description))) } }
        switch e.state.breaker(at: now) {
        case .closed: members.append(.init("breaker", .string("closed")))
        case .open(let until):
            members.append(.init("breaker", .string("open")))
            time("next_probe", until)
        case .halfOpen(let probing): members.append(.init("breaker", .string(probing ? "probing" : "half-open")))
        }
        members.append(.init("failures", .number(String(e.state.failures))))
        if let until = e.state.pausedUntil, until > now { time("paused_until", until) }
        if let rate = e.state.rate {
            members.append(.init("throttle", .string(rate.description)))
            if let next = e.state.nextToken(at: now) { time("next_token", next) }
        }
        members += [.init("queued", .number(String(e.queued))), .init("failed", .number(String(e.failed))),
                    .init("sending", .number(String(e.sending)))]
        if let error = e.state.lastError {
            members.append(.init("last_error", .object([.init("code", .string(error.code)), .init("message", .string(error.message)),
                                                         .init("at", .string(error.at.description))])))
        }
        return .object(members)
    }

    /// Why `m` is not going out now, or nil when it is due (or not waiting at all):
    /// `held`, `expired`, `not_before`, `backoff`, `breaker`, `paused`, `throttled`,
    /// `in_flight` (an older message of its destination is being sent).
    /// - Throws: store errors.
    public func why(_ m: Message, now: Timestamp = .now()) throws(MsgError) -> String? {
        switch m.status {
        case .held: return "held: msg queue release sends it"
        case .queued, .failed: break
        default: return nil
        }
        if let expires = m.expiresAt, expires <= now { return "expired at \(expires): the next flush marks it dead" }
        if let t = m.notBefore, t > now { return "not_before: not sent before \(t)" }
        if let t = m.nextAttemptAt, t > now { return "backoff: next attempt at \(t) (msg retry --now sends it now)" }
        let k = key.of(m)
        var busy = false
        try store.list(Query(statuses: [.sending])) { (r) throws(MsgError) -> Bool in
            busy = key.of(r.message) == k
            return !busy
        }
        if busy { return "in_flight: another message to \(k) is being sent; one goes at a time" }
        if let text = try store.destinationStates()[k] {
            let s = DestinationState(text: text)
            switch s.breaker(at: now) {
            case .open(let until): return "breaker: \(k) is open until \(until) after \(s.failures) failures in a row"
            case .halfOpen(true): return "breaker: a message is probing whether \(k) is back"
            default: break
            }
            if let until = s.pausedUntil, until > now { return "paused: \(k) asked to wait until \(until)" }
            if let next = s.nextToken(at: now), let rate = s.rate { return "throttled: \(k) may take its next message at \(next) (\(rate))" }
        }
        return nil
    }
}
