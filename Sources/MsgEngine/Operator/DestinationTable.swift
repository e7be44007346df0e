import MsgKit

/// `msg destinations` for a person at a terminal: a destination a line, whole
/// (the column the view exists for is never cut), what holds it and until when,
/// its waiting messages, and why (a suspension's reason, else the last error),
/// which gets the room that is left. Fits 80 cells; a wider terminal widens WHY.
public enum DestinationTable {
    /// The table of `entries` at `now` in `width` cells (nil: as wide as it likes).
    /// With `transport`, a TRANSPORT column says which each destination takes.
    public static func render(_ entries: [Destinations.Entry], now: Timestamp, width: Int?, transport: ((String) -> String)? = nil) -> String {
        let rows = entries.map { e -> [String] in
            let (state, until) = hold(e, now: now)
            let why = e.state.suspension.flatMap { $0.holds(at: now) ? $0.reason : nil }
                ?? e.state.lastError.map { "\($0.code): \($0.message)" } ?? ""
            return [TextTable.escaped(e.key), state, until.map { RecordFormatter.relative($0, now: now) } ?? "",
                    String(e.queued), String(e.failed), String(e.sending)] + (transport.map { [TextTable.escaped($0(e.key))] } ?? []) + [why]
        }
        let longest = rows.map { TextTable.displayWidth($0[0]) }.max() ?? 0
        // Not at a terminal: WHY whole.
        let whyAt = transport == nil ? 6 : 7
        let why: TextTable.Column = width == nil ? .fixed("WHY", rows.map { TextTable.displayWidth($0[whyAt]) }.max() ?? 3) : .flexible("WHY", share: 1)
        var columns: [TextTable.Column] = [.fixed("DESTINATION", max(11, longest)), .fixed("STATE", 9), .fixed("UNTIL", 7), .fixed("QUEUED", 6),
                                           .fixed("FAILED", 6), .fixed("SENDING", 7)]
        if transport != nil { columns.append(.fixed("TRANSPORT", max(9, rows.map { TextTable.displayWidth($0[6]) }.max() ?? 0))) }
        let table = TextTable(columns + [why], width: width)
        return table.header + rows.map(table.row).joined()
    }

    /// What holds a destination, in the book's order, and until when: `suspended`,
    /// `paused` (it asked to wait), `open`, `half-open` or `probing` (its breaker),
    /// `throttled` (until its next token); empty when nothing does.
    static func hold(_ e: Destinations.Entry, now: Timestamp) -> (String, Timestamp?) {
        if let s = e.state.suspension, s.holds(at: now) { return ("suspended", s.until) }
        if let until = e.state.pausedUntil, until > now { return ("paused", until) }
        switch e.state.breaker(at: now) {
        case .open(let until): return ("open", until)
        case .halfOpen(let probe): return (probe != nil && e.sending > 0 ? "probing" : "half-open", nil)
        case .closed: break
        }
        if let next = e.state.nextToken(at: now), next > now { return ("throttled", next) }
        return ("", nil)
    }
}
