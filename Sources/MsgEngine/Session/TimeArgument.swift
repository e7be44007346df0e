import MsgKit

/// Parses a point in time given on the command line: RFC 3339
/// (`2026-11-22T13:08:00Z`), a date (`2026-11-22`, its first moment in UTC), or a
/// duration meaning that long ago (`1h`, `1w`) — or from now, with `future: true`
/// (`--not-before 10m`).
public enum TimeArgument {
    /// - Throws: `badInput` saying the accepted forms.
    public static func parse(_ text: String, now: Timestamp = .now(), future: Bool = false) throws(MsgError) -> Timestamp {
        if let t = Timestamp(rfc3339: text) { return t }
        if text.utf8.count == 10, let t = Timestamp(rfc3339: text + "T00:00:00Z") { return t }
        if let d = try? MsgDuration(parsing: text) {
            return Timestamp(milliseconds: now.milliseconds + (future ? d.milliseconds : -d.milliseconds))
        }
        throw MsgError(.badInput, "invalid time '\(text)': write an RFC 3339 time such as 2026-11-22T13:08:00Z, a date such as 2026-11-22, or a duration such as 1h")
    }
}
