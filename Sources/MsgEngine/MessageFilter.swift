import MsgKit

/// What a filter asks of a message beyond what a store's query answers (status,
/// recipient, creation and update times, ids): a header, the last error's code,
/// attempts. `queue ls`, `count`, `rm`, `hold` and `release` share it, so an
/// action on "everything the filter matches" acts on exactly what `ls` lists.
public struct MessageFilter: Sendable, Equatable {
    /// A header that must be there (`--header NAME`), with this value when given
    /// (`--header NAME=VALUE`); names compare case-insensitively, as headers do.
    public var header: (name: String, value: String?)?
    /// The code of the last error (`--error remote`), `none` for no error.
    public var errorCode: String?
    /// At least this many counted attempts.
    public var minAttempts: Int?

    public init(header: (name: String, value: String?)? = nil, errorCode: String? = nil, minAttempts: Int? = nil) {
        self.header = header
        self.errorCode = errorCode
        self.minAttempts = minAttempts
    }

    /// Whether it asks nothing (the store's query is the whole filter).
    public var isEmpty: Bool { header == nil && errorCode == nil && minAttempts == nil }

    public func matches(_ m: Message) -> Bool {
        if let header {
            let name = header.name.lowercased()
            guard let value = m.headers.first(where: { $0.key.lowercased() == name })?.value else { return false }
            if let want = header.value, value != want { return false }
        }
        if let errorCode {
            if errorCode == "none" ? m.lastError != nil : m.lastError?.code != errorCode { return false }
        }
        if let minAttempts, m.attempts < minAttempts { return false }
        return true
    }

    public static func == (a: MessageFilter, b: MessageFilter) -> Bool {
        a.header?.name == b.header?.name && a.header?.value == b.header?.value && a.errorCode == b.errorCode && a.minAttempts == b.minAttempts
    }
}
