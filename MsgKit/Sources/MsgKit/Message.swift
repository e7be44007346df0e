/// One message record (docs/DESIGN.md 2).
///
/// Fields msg does not know are kept in ``extra`` in their input order and
/// written back unchanged, so a pipeline may attach its own keys.
public struct Message: Sendable, Equatable {
    /// UUIDv7, lower-case: the idempotency key for the message's whole life.
    public var id: String
    /// Recipient or destination, never empty.
    public var to: String
    /// Sender, optional.
    public var from: String?
    /// The payload text.
    public var body: String
    /// User metadata, in input order.
    public var headers: Headers
    /// Where the message is in its life.
    public var status: Status
    /// Delivery attempts made that count toward the limit.
    public var attempts: Int
    /// When `compose` made it.
    public var createdAt: Timestamp
    /// When it last changed.
    public var updatedAt: Timestamp
    /// Not delivered before this time.
    public var notBefore: Timestamp?
    /// When a failed message is next due.
    public var nextAttemptAt: Timestamp?
    /// Never attempted at or after this time: it becomes `dead` (`expired`) instead.
    public var expiresAt: Timestamp?
    /// The error of the last failed attempt.
    public var lastError: Failure?
    /// Who is sending it, while `sending`.
    public var lease: Lease?
    /// What happened to it, oldest first.
    public var history: [Event]
    /// Fields msg does not know, kept as they came.
    public var extra: [JSONValue.Member]

    /// A new queued message made now, with its `queued` history event.
    public init(id: String, to: String, from: String? = nil, body: String,
                headers: Headers = [], now: Timestamp, notBefore: Timestamp? = nil, expiresAt: Timestamp? = nil) {
        self.id = id
        self.to = to
        self.from = from
        self.body = body
        self.headers = headers
        self.status = .queued
        self.attempts = 0
        self.createdAt = now
        self.updatedAt = now
        self.notBefore = notBefore
        self.nextAttemptAt = nil
        self.expiresAt = expiresAt
        self.lastError = nil
        self.lease = nil
        self.history = [Event(at: now, event: "queued", status: .queued)]
        self.extra = []
    }

    /// Every field at once, for the decoders.
    init(id: String, to: String, from: String?, body: String, headers: Headers, status: Status,
         attempts: Int, createdAt: Timestamp, updatedAt: Timestamp, notBefore: Timestamp?, nextAttemptAt: Timestamp?,
         expiresAt: Timestamp?, lastError: Failure?, lease: Lease?, history: [Event], extra: [JSONValue.Member]) {
        self.id = id
        self.to = to
        self.from = from
        self.body = body
        self.headers = headers
        self.status = status
        self.attempts = attempts
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.notBefore = notBefore
        self.nextAttemptAt = nextAttemptAt
        self.expiresAt = expiresAt
        self.lastError = lastError
        self.lease = lease
        self.history = history
        self.extra = extra
    }

    /// The error of a failed attempt, as kept in `last_error` and history.
    public struct Failure: Sendable, Equatable {
        /// The error class name: `timeout`, `unreachable`, `rate_limited`, `remote`, `rejected`…
        public var code: String
        /// One line saying what went wrong.
        public var message: String
        /// Whether a later attempt may succeed.
        public var retryable: Bool
        /// When it happened.
        public var at: Timestamp

        /// Makes a failure record.
        public init(code: String, message: String, retryable: Bool, at: Timestamp) {
            self.code = code
            self.message = message
            self.retryable = retryable
            self.at = at
        }

        /// The record of `error` at time `at`; a message longer than
        /// ``RecordLimits/maxErrorMessageBytes`` is cut.
        public init(_ error: MsgError, at: Timestamp) {
            var message = error.message
            if message.utf8.count > RecordLimits.maxErrorMessageBytes {
                var bytes = Array(message.utf8.prefix(RecordLimits.maxErrorMessageBytes - 3))
                // Never end inside a character's bytes (at worst one whole character more goes).
                while let last = bytes.last, last & 0xC0 == 0x80 { bytes.removeLast() }
                if let last = bytes.last, last >= 0xC0 { bytes.removeLast() }
                message = String(decoding: bytes, as: UTF8.self) + "…"
            }
            self.init(code: error.code.name, message: message, retryable: error.code.isRetryable, at: at)
        }
    }

    /// The claim of one process on a message it is sending (docs/DESIGN.md 6, leases).
    public struct Lease: Sendable, Equatable {
        /// The host name of the owner.
        public var host: String
        /// The owner's process id.
        public var pid: Int32
        /// When the lease ends; after that anyone may take the message over.
        public var until: Timestamp

        /// Makes a lease.
        public init(host: String, pid: Int32, until: Timestamp) {
            self.host = host
            self.pid = pid
            self.until = until
        }
    }

    /// One history entry: `queued`, `attempt`, `sent`, `failed`, `dead`, `held`, `recovered`, `edited`…
    public struct Event: Sendable, Equatable {
        public var at: Timestamp
        public var event: String
        public var status: Status
        public var error: Failure?
        /// Fields of the event msg does not know, kept as they came.
        public var extra: [JSONValue.Member]

        /// Makes an event.
        public init(at: Timestamp, event: String, status: Status, error: Failure? = nil, extra: [JSONValue.Member] = []) {
            self.at = at
            self.event = event
            self.status = status
            self.error = error
            self.extra = extra
        }
    }

    /// When the message is next due: the later of ``notBefore`` and ``nextAttemptAt``;
    /// nil when it has neither (due now). Stores index this, `flush` waits for it.
    public var dueAt: Timestamp? {
        switch (notBefore, nextAttemptAt) {
        case (let a?, let b?): max(a, b)
        case (let a?, nil): a
        case (nil, let b?): b
        case (nil, nil): nil
        }
    }

    /// Moves the message to `next`, stamping `updated_at` and appending a history event.
    /// - Throws: `MsgError.invalidTransition` when the rules forbid it; the message is unchanged.
    public mutating func transition(to next: Status, event: String, at now: Timestamp, error: Failure? = nil) throws(MsgError) {
        try status.checkChange(to: next, id: id)
        status = next
        updatedAt = now
        history.append(Event(at: now, event: event, status: next, error: error))
    }
}
