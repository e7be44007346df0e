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
    /// The last error of a failed or dead message (`--error remote`), or none
    /// (`--error none`: a message that is neither, or has no error).
    public var lastError: ErrorMatch?
    /// At least this many counted attempts.
    public var minAttempts: Int?

    public init(header: (name: String, value: String?)? = nil, lastError: ErrorMatch? = nil, minAttempts: Int? = nil) {
        self.header = header
        self.lastError = lastError
        self.minAttempts = minAttempts
    }

    /// Whether it asks nothing (the store's query is the whole filter).
    public var isEmpty: Bool { toPattern == nil && header == nil && lastError == nil && minAttempts == nil }

    /// The codes a last error has (`last_error.code`), for `--error`.
    public static let errorCodes = ["rate_limited", "rejected", "remote", "timeout", "unreachable", "expired", "corrupt"]

    /// What `--error` asks of a message's last error.
    public enum ErrorMatch: Sendable, Equatable {
        /// This code (one of ``MessageFilter/errorCodes``).
        case code(String)
        /// No last error (or a status that keeps none).
        case none

        /// `none`, or one of ``MessageFilter/errorCodes``.
        /// - Throws: `usage` for anything else, naming what is.
        public init(parsing text: String) throws(MsgError) {
            if text == "none" {
                self = .none
            } else if MessageFilter.errorCodes.contains(text) {
                self = .code(text)
            } else {
                throw MsgError(.usage, "unknown code '\(text)'; expected one of \(MessageFilter.errorCodes.joined(separator: ", ")) or none")
            }
        }
    }

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
        if let lastError {
            // The last error of what failed: a message sent after a failure has none.
            let code = m.status == .failed || m.status == .dead ? m.lastError?.code : nil
            switch lastError {
            case .none: if code != nil { return false }
            case .code(let want): if code != want { return false }
            }
        }
        if let minAttempts, m.attempts < minAttempts { return false }
        return true
    }

    public static func == (a: MessageFilter, b: MessageFilter) -> Bool {
        a.toPattern == b.toPattern && a.header?.name == b.header?.name && a.header?.value == b.header?.value && a.lastError == b.lastError && a.minAttempts == b.minAttempts
    }
}
