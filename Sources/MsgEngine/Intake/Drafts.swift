import MsgKit
import MsgSupport

/// Turns drafts (`{"to","body",…}`) into new queued records, as `compose` does.
public struct Drafts: Sendable {
    /// Values used where a draft has none (from `compose` flags).
    public struct Defaults: Sendable {
        public var to: String?
        public var from: String?
        public var headers: Headers
        public var notBefore: Timestamp?
        /// When a message expires (`--expires-in`).
        public var expiresAt: Timestamp?
        public init(to: String? = nil, from: String? = nil, headers: Headers = [], notBefore: Timestamp? = nil, expiresAt: Timestamp? = nil) {
            self.to = to
            self.from = from
            self.headers = headers
            self.notBefore = notBefore
            self.expiresAt = expiresAt
        }
    }

    private let ids: UUIDv7Generator
    private let defaults: Defaults
    private let clock: @Sendable () -> Timestamp
    private let unknown: UnknownFields

    /// Completes drafts with ids from `ids`, times from `clock`, and `defaults`;
    /// fields msg does not know are treated as `unknown` says.
    public init(ids: UUIDv7Generator = UUIDv7Generator(), defaults: Defaults = Defaults(), unknown: UnknownFields = .keep,
                clock: @escaping @Sendable () -> Timestamp = { Timestamp.now() }) {
        self.ids = ids
        self.defaults = defaults
        self.unknown = unknown
        self.clock = clock
    }

    /// A new record from flags.
    public func make(to: String, body: String) throws(MsgError) -> Message {
        guard !to.isEmpty else { throw MsgError(.usage, "--to must not be empty") }
        return Message(id: ids.next(), to: to, from: defaults.from, body: body, headers: defaults.headers,
                       now: clock(), notBefore: defaults.notBefore, expiresAt: defaults.expiresAt)
    }

    /// Completes one draft (read by ``Draft``). An `id` it carries is kept (it is the
    /// idempotency key); fields msg does not know are kept; a draft's headers are set
    /// over the default ones; unknown fields are kept, noted or refused as the
    /// drafts were made to (``UnknownFields``).
    /// - Throws: `badInput` naming the missing or wrong field.
    public func complete(_ json: JSONValue) throws(MsgError) -> Message {
        try complete(json, id: nil, createdAt: nil)
    }

    /// ``complete(_:)`` with the id to take when the draft carries none and the
    /// creation time (an inbox row's, made when it was inserted); nil for a new id and now.
    /// - Throws: `badInput` naming the missing or wrong field.
    public func complete(_ json: JSONValue, id: String?, createdAt: Timestamp?) throws(MsgError) -> Message {
        let draft = try Draft(json: json)
        switch unknown {
        case .keep: break
        case .warn(let notes): for field in draft.extra { notes.note(field.key) }
        case .refuse: if let field = draft.extra.first { throw MsgError(.badInput, DraftFields.unknown(field.key)) }
        }
        guard let to = draft.to ?? defaults.to else { throw MsgError(.badInput, "missing field \"to\"") }
        var headers = defaults.headers
        headers.merge(draft.headers)
        var m = Message(id: draft.id ?? id ?? ids.next(), to: to, from: draft.from ?? defaults.from, body: draft.body,
                        headers: headers, now: createdAt ?? clock(), notBefore: draft.notBefore ?? defaults.notBefore,
                        expiresAt: draft.expiresAt ?? defaults.expiresAt)
        m.extra = draft.extra
        return m
    }
}
