#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// What a filter asks of a message beyond what a store's query answers (status,
/// recipient, creation and update times, ids): a recipient pattern, a header, the
/// last error's code, attempts. `queue ls`, `count`, `rm`, `hold`, `release`,
/// `flush` and `retry` share it, so an action on "everything the filter matches"
/// acts on exactly what `ls` lists.
public struct MessageFilter: Sendable, Equatable {
    /// A shell pattern the recipient must match (`*@example.com`), as fnmatch(3).
    public var toPattern: String?
    /// A header that must be there (`--header NAME`), with this value when given
    /// (`--header NAME=VALUE`); names compare case-insensitively, as headers do.
    public var header: (name: String, value: String?)?
    /// The code of the last error of a failed or dead message (`--error remote`);
    /// `none`: a message that is neither, or has no error.
    public var errorCode: String?
    /// At least this many counted attempts.
    public var minAttempts: Int?

    public init(header: (name: String, value: String?)? = nil, errorCode: String? = nil, minAttempts: Int? = nil) {
        self.header = header
        self.errorCode = errorCode
        self.minAttempts = minAttempts
    }

    /// Whether it asks nothing (the store's query is the whole filter).
    public var isEmpty: Bool { toPattern == nil && header == nil && errorCode == nil && minAttempts == nil }

    /// The codes a last error has (`last_error.code`), for `--error`.
    public static let errorCodes = ["rate_limited", "rejected", "remote", "timeout", "unreachable", "expired", "corrupt"]

    /// Whether `text` is a shell pattern rather than a plain recipient.
    public static func isPattern(_ text: String) -> Bool {
        text.contains { $0 == "*" || $0 == "?" || $0 == "[" }
    }

    public func matches(_ m: Message) -> Bool {
        if let toPattern, fnmatch(toPattern, m.to, 0) != 0 { return false }
        if let header {
            let name = header.name.lowercased()
            guard let value = m.headers.first(where: { $0.key.lowercased() == name })?.value else { return false }
            if let want = header.value, value != want { return false }
        }
        if let errorCode {
            // The last error of what failed: a message sent after a failure has none.
            let code = m.status == .failed || m.status == .dead ? m.lastError?.code : nil
            if errorCode == "none" ? code != nil : code != errorCode { return false }
        }
        if let minAttempts, m.attempts < minAttempts { return false }
        return true
    }

    public static func == (a: MessageFilter, b: MessageFilter) -> Bool {
        a.toPattern == b.toPattern && a.header?.name == b.header?.name && a.header?.value == b.header?.value && a.errorCode == b.errorCode && a.minAttempts == b.minAttempts
    }
}
