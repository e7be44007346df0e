import MsgKit

/// Turns drafts (`{"to","body",…}`) into new queued records, as `compose` does.
public struct Drafts: Sendable {
    /// Values used where a draft has none (from `compose` flags).
    public struct Defaults: Sendable {
        public var to: String?
        public var from: String?
        public var headers: [(key: String, value: String)]
        public var notBefore: Timestamp?
        public init(to: String? = nil, from: String? = nil, headers: [(key: String, value: String)] = [], notBefore: Timestamp? = nil) {
            self.to = to
            self.from = from
            self.headers = headers
            self.notBefore = notBefore
        }
    }

    /// Fields of a full record that describe its life, not its content: a draft's
    /// values for them are dropped, the new record starts its life afresh.
    static let lifecycle: Set<String> = ["status", "attempts", "created_at", "updated_at", "next_attempt_at", "last_error", "lease", "history"]

    private let ids: UUIDv7Generator
    private let defaults: Defaults
    private let clock: @Sendable () -> Timestamp

    /// Completes drafts with ids from `ids`, times from `clock`, and `defaults`.
    public init(ids: UUIDv7Generator = UUIDv7Generator(), defaults: Defaults = Defaults(), clock: @escaping @Sendable () -> Timestamp = { Timestamp.now() }) {
        self.ids = ids
        self.defaults = defaults
        self.clock = clock
    }

    /// A new record from flags.
    public func make(to: String, body: String) throws(MsgError) -> Message {
        guard !to.isEmpty else { throw MsgError(.usage, "--to must not be empty") }
        return Message(id: ids.next(), to: to, from: defaults.from, body: body, headers: defaults.headers,
                       now: clock(), notBefore: defaults.notBefore)
    }

    /// Completes one draft. An `id` it carries is kept (it is the idempotency key);
    /// fields msg does not know are kept.
    /// - Throws: `badInput` naming the missing or wrong field.
    public func complete(_ draft: JSONValue) throws(MsgError) -> Message {
        guard case .object(let members) = draft else {
            throw MsgError(.badInput, "expected a draft object such as {\"to\":\"bob\",\"body\":\"hi\"}, got \(draft.kindName)")
        }
        var withDefaults = members
        if draft["to"] == nil, let to = defaults.to { withDefaults.append(.init("to", .string(to))) }
        let fields = JSONValue.object(withDefaults)
        guard let to = fields["to"] else { throw MsgError(.badInput, "missing field \"to\"") }
        guard case .string(let recipient) = to, !recipient.isEmpty else { throw MsgError(.badInput, "field \"to\" must be a non-empty string") }
        guard let bodyValue = fields["body"] else { throw MsgError(.badInput, "missing field \"body\"") }
        guard case .string(let body) = bodyValue else { throw MsgError(.badInput, "field \"body\" must be a string, not \(bodyValue.kindName)") }
        var id = ids.next()
        if let given = fields["id"] {
            guard case .string(let s) = given, UUIDText.isCanonical(s) else {
                throw MsgError(.badInput, "field \"id\" must be a lower-case UUID")
            }
            id = s
        }
        var from = defaults.from
        if let f = fields["from"] {
            guard case .string(let s) = f else { throw MsgError(.badInput, "field \"from\" must be a string") }
            from = s
        }
        var headers = defaults.headers
        if let h = fields["headers"] {
            guard case .object(let hs) = h else { throw MsgError(.badInput, "field \"headers\" must be an object of strings") }
            for member in hs {
                guard case .string(let v) = member.value else { throw MsgError(.badInput, "field \"headers.\(member.key)\" must be a string") }
                if let i = headers.firstIndex(where: { $0.key == member.key }) { headers[i].value = v } else { headers.append((member.key, v)) }
            }
        }
        var notBefore = defaults.notBefore
        if let nb = fields["not_before"] {
            guard case .string(let s) = nb, let t = Timestamp(rfc3339: s) else {
                throw MsgError(.badInput, "field \"not_before\" must be an RFC 3339 time such as 2026-11-22T13:08:00.123Z")
            }
            notBefore = t
        }
        var m = Message(id: id, to: recipient, from: from, body: body, headers: headers, now: clock(), notBefore: notBefore)
        let known = Message.knownFields.union(Self.lifecycle)
        var seen: Set<String> = []
        m.extra = members.reversed().filter { !known.contains($0.key) && seen.insert($0.key).inserted }.reversed()
        return m
    }
}
