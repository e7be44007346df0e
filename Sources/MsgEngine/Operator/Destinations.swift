import MsgKit

/// What `msg destinations` and `msg queue show` say about destinations: their
/// stored state (suspension, breaker, pause, throttle, last error) with their
/// waiting messages; and the operator's suspend and resume.
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

    /// Every destination with a stored state or a waiting message, by key; the
    /// messages counted from the counts the store keeps when destinations are by
    /// recipient. - Throws: store errors.
    public func list() throws(MsgError) -> [Entry] {
        var entries: [String: Entry] = [:]
        for (k, text) in try store.destinationStates(nil) { entries[k] = Entry(key: k, state: DestinationState(text: text)) }
        if key == .recipient, let counts = try store.capabilities.journal?.counts(now: .now(), excluding: []) {
            for (k, n) in counts.tally.figures where k.kind == .messages {
                guard let status = Status(rawValue: k.b), Tally.isByRecipient(status) else { continue }
                var e = entries[k.a] ?? Entry(key: k.a, state: DestinationState())
                if status == .queued { e.queued += n } else { e.failed += n }
                entries[k.a] = e
            }
            for (k, n) in counts.inFlight { entries[k, default: Entry(key: k, state: DestinationState())].sending += n }
            return entries.values.sorted { $0.key < $1.key }
        }
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

    /// Refuses `key` when it has a shell pattern's characters (`*`, `?`, `[`) and no
    /// destination is named so: `--to` takes patterns, while suspend and resume act
    /// on one destination, and one named `api.*` by mistake would hold nothing back.
    /// - Throws: `usage`; store errors.
    public func refusePattern(_ key: String, command: String) throws(MsgError) {
        guard MessageFilter.isPattern(key), !(try list().contains { $0.key == key }) else { return }
        throw MsgError(.usage, "destinations \(command): '\(key)' is a pattern, and no destination is named so; name one destination as msg destinations lists it (patterns are for --to)")
    }

    /// Suspends destination `key` (`msg destinations suspend`) until `until`, or until
    /// resumed when nil, in one claim step: every process on the store sees it at its
    /// next claim. Messages already claimed go on; nothing more of it is claimed.
    /// - Returns: the state as stored. - Throws: store errors; `usage` for a reason
    ///   over 1 KiB.
    public func suspend(_ key: String, until: Timestamp?, reason: String, now: Timestamp = .now()) throws(MsgError) -> DestinationState {
        guard reason.utf8.count <= 1024 else { throw MsgError(.usage, "--reason is \(reason.utf8.count) bytes; at most 1024") }
        return try change(key) { $0.suspension = .init(since: now, until: until, reason: reason) }
    }

    /// What ``resume(_:now:)`` ended.
    public struct Resumed: Sendable, Equatable {
        /// An operator's suspension.
        public var suspension = false
        /// A pause the destination asked for, until then.
        public var pause: Timestamp?
        /// An open or half-open breaker, after this many failures in a row.
        public var breaker: Int?
        /// Whether anything was ended.
        public var any: Bool { suspension || pause != nil || breaker != nil }
    }

    /// Lets a destination send again at once (`msg destinations resume`): ends its
    /// suspension, the pause it asked for and an open breaker (failures forgotten),
    /// in one claim step, so every process on the store sees it at its next claim.
    /// - Returns: what was ended. - Throws: store errors.
    public func resume(_ key: String, now: Timestamp = .now()) throws(MsgError) -> Resumed {
        var was = Resumed()
        _ = try change(key) { s in
            was.suspension = s.suspension?.holds(at: now) ?? false
            s.suspension = nil
            if let until = s.pausedUntil, until > now { was.pause = until }
            s.pausedUntil = nil
            if s.openUntil != nil { was.breaker = s.failures }
            s.openUntil = nil
            s.opens = 0
            s.failures = 0
            s.probe = nil
        }
        return was
    }

    private func change(_ key: String, _ body: (inout DestinationState) -> Void) throws(MsgError) -> DestinationState {
        try store.claimSession { (session) throws(MsgError) -> DestinationState in
            // Where processes claim at once, the key is held first, so no claim of it
            // writes its state over this change (what is in flight is not needed: read
            // as for a recipient, the cheapest).
            if let locks = session.locks { _ = try locks.reserve([key], wait: true, keysAreRecipients: true) }
            var s = try session.states([key])[key].map { DestinationState(text: $0) } ?? DestinationState()
            body(&s)
            _ = try session.store([], states: [key: s.isEmpty ? nil : s.text])
            return s
        }
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
        case .halfOpen(let probe): members.append(.init("breaker", .string(probe != nil && e.sending > 0 ? "probing" : "half-open")))
        }
        if let suspension = e.state.suspension, suspension.holds(at: now) {
            var inner: [JSONValue.Member] = [.init("since", .string(suspension.since.description))]
            if let until = suspension.until { inner.append(.init("until", .string(until.description))) }
            inner.append(.init("reason", .string(suspension.reason)))
            members.append(.init("suspended", .object(inner)))
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

    /// Why `m` is not going out now, or nil when it is due (or not waiting at all),
    /// as ``DestinationBook`` words it: `held`, `expired`, `not_before`, `backoff`,
    /// `in_flight` (an older message of its destination is being sent), `paused`,
    /// `breaker`, `throttled`.
    /// - Throws: store errors.
    public func why(_ m: Message, now: Timestamp = .now()) throws(MsgError) -> String? {
        let k = key.of(m)
        var busy = false
        if key == .recipient {
            // From the counts the store keeps when it keeps them: a count of one
            // recipient's messages in flight reads every open record.
            if let counts = try store.capabilities.journal?.counts(now: now, excluding: []) {
                busy = (counts.inFlight[k] ?? 0) > 0
            } else {
                busy = try store.count(Query(statuses: [.sending], to: k, limit: 1)) > 0
            }
        } else {
            try store.list(Query(statuses: [.sending])) { (r) throws(MsgError) -> Bool in
                busy = key.of(r.message) == k
                return !busy
            }
        }
        let state = try store.destinationStates([k])[k].map { DestinationState(text: $0) }
        var probeInFlight = false
        if let probe = state?.probe, let r = try store.get(probe)?.message, r.status == .sending, let lease = r.lease {
            probeInFlight = Owner.isAlive(lease, now: now)
        }
        return DestinationBook(rules: DeliveryRules()).why(m, key: k, state: state, busy: busy, probeInFlight: probeInFlight, now: now)
    }
}
