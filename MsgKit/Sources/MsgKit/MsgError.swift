/// The one error type of msg: an opaque code, a one-line message for the user,
/// and optionally the backend error that caused it.
///
/// Every code carries its process exit status (docs/DESIGN.md 8) and whether the
/// failure is worth retrying, both taken from one table (``MsgError/Code``), as
/// Postfix derives "soft error" and its exit code from one table. Two errors are
/// equal when their codes are equal.
public struct MsgError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is. Opaque: compare with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        @usableFromInline let raw: UInt8

        private init(_ raw: UInt8) { self.raw = raw }

        /// The command line was wrong (exit 64).
        public static let usage = Code(0)
        /// An input line or value was malformed (exit 65).
        public static let badInput = Code(1)
        /// A requested status change is not allowed by the transition rules (exit 65).
        public static let invalidTransition = Code(2)
        /// No message has the given id (exit 65).
        public static let notFound = Code(3)
        /// A plugin or a transport could not be found or loaded (exit 69).
        public static let unavailable = Code(4)
        /// The store could not be read or written (exit 74).
        public static let storeIO = Code(5)
        /// The store's file is damaged; it was moved aside (exit 74).
        public static let corrupt = Code(6)
        /// The configuration is wrong (exit 78).
        public static let config = Code(7)
        /// Delivery did not finish before its deadline (retryable, exit 75).
        public static let timeout = Code(8)
        /// The destination cannot be reached: offline. Retried without using up attempts (exit 75).
        public static let unreachable = Code(9)
        /// The destination asked us to slow down (retryable with a longer backoff, exit 75).
        public static let rateLimited = Code(10)
        /// The destination failed on its side (retryable, exit 75).
        public static let remote = Code(11)
        /// The destination refused the message for good: it becomes `dead` (exit 1).
        public static let rejected = Code(12)
        /// The store (or a file msg must write) may not be written or read by this
        /// user: a permission, not damage (exit 77, EX_NOPERM).
        public static var noPermission: Code { Code(13) }

        private static let table: [(name: String, exit: Int32, retryable: Bool)] = [
            ("usage", 64, false),
            ("bad_input", 65, false),
            ("invalid_transition", 65, false),
            ("not_found", 65, false),
            ("unavailable", 69, false),
            ("store_io", 74, false),
            ("corrupt", 74, false),
            ("config", 78, false),
            ("timeout", 75, true),
            ("unreachable", 75, true),
            ("rate_limited", 75, true),
            ("remote", 75, true),
            ("rejected", 1, false),
            ("no_permission", 77, false),
        ]

        /// The stable name written in records (`last_error.code`), e.g. `timeout`.
        public var name: String { Self.table[Int(raw)].name }
        /// The process exit status for this failure (docs/DESIGN.md 8).
        public var exitCode: Int32 { Self.table[Int(raw)].exit }
        /// Whether trying again later may succeed.
        public var isRetryable: Bool { Self.table[Int(raw)].retryable }
        /// Whether this is one of the delivery error classes a transport reports.
        public var isDeliveryClass: Bool { (8...12).contains(raw) }
        public var description: String { name }

        /// All codes, in table order.
        public static var all: [Code] { (0..<UInt8(table.count)).map(Code.init) }

        /// Looks a code up by its stable name.
        public init?(name: String) {
            guard let index = Self.table.firstIndex(where: { $0.name == name }) else { return nil }
            self.init(UInt8(index))
        }
    }

    /// What kind of failure this is.
    public let code: Code
    /// One line for the user, without the `msg: ` prefix.
    public let message: String
    /// The backend error behind this one (an SQLite result code, an errno), if any.
    /// Never shown to the user as the whole message.
    public let underlying: (any Error & Sendable)?

    /// Makes an error.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var description: String { message }

    public static func == (lhs: MsgError, rhs: MsgError) -> Bool { lhs.code == rhs.code }
}

/// An operating-system error number, kept as the underlying error of a ``MsgError``.
public struct Errno: Error, Sendable, Equatable, CustomStringConvertible {
    /// The raw `errno` value.
    public let rawValue: Int32
    /// Wraps a raw `errno` value.
    public init(_ rawValue: Int32) { self.rawValue = rawValue }
    public var description: String { Posix.describe(rawValue) }
}
