import MsgKit

/// A state change worth telling an operator (docs/DESIGN.md 6, Events): a message
/// became dead, a destination's breaker opened or closed, a destination was
/// suspended or resumed, a message was recovered. Written as one NDJSON line by
/// ``EventSink``.
public struct DeliveryEvent: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case dead, breakerOpened = "breaker_opened", breakerClosed = "breaker_closed", suspended, resumed, recovered
    }

    public var kind: Kind
    public var at: Timestamp
    public var destination: String
    /// The message, for `dead` and `recovered`.
    public var id: String?
    /// Its status after the change (`recovered`: `queued` or `sent`).
    public var status: Status?
    public var attempts: Int?
    /// The error that caused it (`dead`, `breaker_opened`).
    public var error: Message.Failure?
    /// When it ends by itself (`breaker_opened`, `suspended`).
    public var until: Timestamp?
    /// Why (`suspended`).
    public var reason: String?

    public init(_ kind: Kind, at: Timestamp, destination: String, id: String? = nil, status: Status? = nil, attempts: Int? = nil,
                error: Message.Failure? = nil, until: Timestamp? = nil, reason: String? = nil) {
        self.kind = kind
        self.at = at
        self.destination = destination
        self.id = id
        self.status = status
        self.attempts = attempts
        self.error = error
        self.until = until
        self.reason = reason
    }

    /// A message that became dead.
    public static func dead(_ m: Message, destination: String, at: Timestamp) -> DeliveryEvent {
        DeliveryEvent(.dead, at: at, destination: destination, id: m.id, status: m.status, attempts: m.attempts, error: m.lastError)
    }

    /// The event as one line of JSON, with its newline.
    public var line: String {
        var members: [JSONValue.Member] = [.init("event", .string(kind.rawValue)), .init("at", .string(at.description)),
                                           .init("destination", .string(destination))]
        if let id { members.append(.init("id", .string(id))) }
        if let status { members.append(.init("status", .string(status.rawValue))) }
        if let attempts { members.append(.init("attempts", .number(String(attempts)))) }
        if let error {
            members.append(.init("error", .object([.init("code", .string(error.code)), .init("message", .string(error.message))])))
        }
        if let until { members.append(.init("until", .string(until.description))) }
        if let reason { members.append(.init("reason", .string(reason))) }
        var w = JSONWriter()
        w.value(.object(members))
        return String(decoding: w.bytes, as: UTF8.self) + "\n"
    }
}
