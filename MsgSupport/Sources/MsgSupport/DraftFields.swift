import MsgKit

/// The fields a draft may carry, and the nearest one to a field msg does not know:
/// `subject` is `headers.Subject`, `bdoy` is `body`.
///
/// Why: a draft's unknown fields are kept (a record carries what msg does not know),
/// so `{"to":…,"subject":"Hello"}` once went out as a mail without a Subject, and
/// nothing said so.
public enum DraftFields {
    /// The content fields of a draft, as msg-compose(1) lists them.
    public static let known: [String] = RecordField.allCases.filter { !$0.isLifecycle }.map(\.key)

    /// Headers a draft names at its top level by mistake, by their lower-case
    /// spelling with `_` for `-`, and how they are written.
    public static let headers: [String: String] = [
        "subject": "Subject", "cc": "Cc", "bcc": "Bcc", "reply_to": "Reply-To", "in_reply_to": "In-Reply-To",
        "references": "References", "content_type": "Content-Type", "message_id": "Message-ID", "sender": "Sender",
        "date": "Date", "priority": "Priority", "x_priority": "X-Priority", "list_unsubscribe": "List-Unsubscribe",
    ]

    /// The field `key` was probably meant to be (`headers.Subject`), or nil.
    public static func nearest(to key: String) -> String? {
        let folded = String(key.lowercased().map { $0 == "-" ? "_" : $0 })
        if let header = headers[folded] { return "headers.\(header)" }
        let scored = known.map { ($0, ParameterSpelling.editDistance(folded, $0)) }.min { $0.1 < $1.1 }
        guard let (field, d) = scored, d <= (field.count >= 4 ? 2 : 1) else { return nil }
        return field
    }

    /// The line that names an unknown field `key` and its nearest known one.
    public static func unknown(_ key: String) -> String {
        let hint = nearest(to: key).map { " (did you mean \"\($0)\"?)" } ?? ""
        return "unknown field \"\(key)\"\(hint)"
    }
}
