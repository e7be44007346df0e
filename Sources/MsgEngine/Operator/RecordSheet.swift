import MsgKit

/// One record for a person at a terminal (`msg queue show`): a field a line, then
/// its history a line an event. Standard output elsewhere gets the record as JSON.
public enum RecordSheet {
    /// The sheet of `m`, relative to `now` for when it is next due.
    /// `waiting` says why a waiting message is not going out.
    /// `policy`, when given, says when a message still to be sent gives up.
    public static func text(_ m: Message, now: Timestamp = .now(), waiting: String? = nil, policy: RetryPolicy? = nil) -> String {
        var lines: [(String, String)] = [("id", m.id), ("status", m.status.rawValue + (m.attempts > 0 ? ", \(m.attempts) attempt\(m.attempts == 1 ? "" : "s")" : "")), ("to", m.to)]
        if let from = m.from { lines.append(("from", from)) }
        lines.append(("created", m.createdAt.description))
        lines.append(("updated", m.updatedAt.description))
        if let due = m.dueAt, [.queued, .failed].contains(m.status) {
            lines.append(("next", "\(RecordFormatter.next(m, now: now)) (\(due))"))
        }
        if let expires = m.expiresAt { lines.append(("expires", expires.description)) }
        if let waiting { lines.append(("waiting", waiting)) }
        if let policy, let givesUp = policy.givingUp(m) { lines.append(("gives up", givesUp)) }
        if let lease = m.lease { lines.append(("lease", "\(lease.host) pid \(lease.pid) until \(lease.until)")) }
        if let e = m.standingError { lines.append(("last error", "\(e.code): \(e.message)")) }
        for h in m.headers { lines.append(("header", "\(h.key)=\(h.value)")) }
        for member in m.extra where policy == nil || ![RetryPolicy.Promise.maxAttemptsKey, RetryPolicy.Promise.giveUpAtKey].contains(member.key) {
            var w = JSONWriter()
            w.value(member.value)
            lines.append((member.key, String(decoding: w.bytes, as: UTF8.self)))
        }
        var out = ""
        for (name, value) in lines { out += name.padding(toWidth: 12) + TextTable.fit(value, 4096) + "\n" }
        out += "body\n"
        for line in m.body.utf8.split(separator: 0x0A, omittingEmptySubsequences: false) {
            out += "    " + TextTable.fit(String(decoding: line, as: UTF8.self), 4096) + "\n"
        }
        out += "history\n"
        for e in m.history {
            let error = e.error.map { "  \($0.code): \($0.message)" } ?? ""
            out += "    \(e.at)  \(e.event.padding(toWidth: 10))\(e.status.rawValue)\(TextTable.fit(error, 4096))\n"
        }
        return out
    }
}

extension String {
    /// The string and spaces after it to `width` characters (at least one space).
    func padding(toWidth width: Int) -> String { self + String(repeating: " ", count: Swift.max(1, width - count)) }
}
