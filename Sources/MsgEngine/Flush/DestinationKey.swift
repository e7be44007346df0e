import MsgKit

/// What makes two messages go to one destination (docs/DESIGN.md 6): they are
/// delivered in FIFO order, one at a time, and share a throttle and a breaker.
public enum DestinationKey: Sendable, Equatable, CustomStringConvertible {
    /// The recipient, `to` (the default).
    case recipient
    /// The value of a header (messages without it share the key ``missingHeader``).
    case header(String)
    /// Each message is its own destination: no order, no shared throttle.
    case id

    /// The key of messages that lack the header a ``header(_:)`` key names.
    public static let missingHeader = ""

    /// Reads `to`, `header:NAME` or `id`.
    /// - Throws: `usage` saying the accepted forms.
    public init(parsing text: String) throws(MsgError) {
        switch text {
        case "to": self = .recipient
        case "id": self = .id
        default:
            guard text.hasPrefix("header:"), text.count > 7 else {
                throw MsgError(.usage, "invalid destination key '\(text)': expected to, header:NAME or id")
            }
            self = .header(String(text.dropFirst(7)))
        }
    }

    /// The key of `r`: its recipient or id read where the record is kept.
    public func of(_ r: EncodedMessage) -> String {
        switch self {
        case .recipient: r.to
        case .header: of(r.message)
        case .id: r.id
        }
    }

    /// The key of `m`.
    public func of(_ m: Message) -> String {
        switch self {
        case .recipient: m.to
        case .header(let name): m.headers[name] ?? Self.missingHeader
        case .id: m.id
        }
    }

    public var description: String {
        switch self {
        case .recipient: "to"
        case .header(let name): "header:\(name)"
        case .id: "id"
        }
    }
}
