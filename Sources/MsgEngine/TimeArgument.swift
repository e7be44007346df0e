import MsgKit

/// Parses a point in time given on the command line: RFC 3339
/// (`2026-11-22T13:08:00Z`) or a duration meaning that long ago (`1h`) — or from
/// now, with `future: true` (`--not-before 10m`).
public enum TimeArgument {
    /// - Throws: `badInput` saying both accepted forms.
    public static func parse(_ text: String, now: Timestamp = .now(), future: Bool = false) throws(MsgError) -> Timestamp {
        if let t = Timestamp(rfc3339: text) { return t }
        if let d = try? MsgDuration(parsing: text) {
            return Timestamp(milliseconds: now.milliseconds + (future ? d.milliseconds : -d.milliseconds))
        }
        throw MsgError(.badInput, "invalid time '\(text)': write an RFC 3339 time such as 2026-11-22T13:08:00Z or a duration such as 1h")
    }
}
