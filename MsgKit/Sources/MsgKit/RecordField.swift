/// The fields of a record, in the order msg writes them (msg-record(5)).
///
/// This is the one list of them: the record readers (``FieldReader`` and
/// ``RecordDecoder``), the drafts `compose` reads and the CSV columns of `export`
/// are derived from it.
public enum RecordField: String, CaseIterable, Sendable {
    case id, to, from, body, headers, status, attempts
    case createdAt = "created_at"
    case updatedAt = "updated_at"
    case notBefore = "not_before"
    case nextAttemptAt = "next_attempt_at"
    case expiresAt = "expires_at"
    case lastError = "last_error"
    case lease, history

    /// The field's key in JSON text.
    public var key: String { rawValue }

    /// Whether the field describes the record's life rather than its content. A
    /// draft's value for such a field is dropped: `compose` starts a new life.
    public var isLifecycle: Bool {
        switch self {
        case .status, .attempts, .createdAt, .updatedAt, .nextAttemptAt, .lastError, .lease, .history: true
        case .id, .to, .from, .body, .headers, .notBefore, .expiresAt: false
        }
    }

    /// Every key, in order.
    public static let keys: [String] = allCases.map(\.key)
}
