import MsgKit
import MsgSupport

/// The pages: overview, destinations, messages, one message, dead letters, ledger.
extension Dashboard {
    /// A whole page: the navigation, `body` in `<main>`, the one script file.
    func page(title: String, status: Int = 200, _ body: (inout HTML) -> Void) -> WebResponse {
        var h = HTML()
        h.tag("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>")
        h.text(title)
        h.tag("</title><link rel=\"stylesheet\" href=\"/assets/app.css\"><script src=\"/assets/app.js\" defer></script></head><body data-refresh=\"")
        h.text(String(options.refresh))
        h.tag("\"><header><nav><a href=\"/\">Overview</a><a href=\"/destinations\">Destinations</a><a href=\"/messages\">Messages</a><a href=\"/dead\">Dead letters</a><a href=\"/ledger\">Ledger</a></nav><span class=\"store\">")
        h.text(options.storeName + (options.allowActions ? " · actions on" : " · read-only"))
        h.tag("</span></header><main id=\"main\">")
        body(&h)
        h.tag("</main></body></html>\n")
        return WebResponse(status: status, headers: [WebHeader("content-type", "text/html; charset=utf-8")], body: Array(h.markup.utf8))
    }

    func overview() throws(MsgError) -> WebResponse {
        let now = Timestamp.now()
        let (f, oldest) = try withStore { (s) throws(MsgError) in
            var first: Message?
            try s.list(Query(statuses: [.queued, .failed], limit: 1)) { (r) throws(MsgError) -> Bool in
                first = r.message
                return false
            }
            return (try Metrics(store: s).figures(now: now), first)
        }
        return page(title: "msg: overview") { h in
            h.tag("<h1>Overview</h1><section class=\"cards\">")
            for s in Status.allCases {
                h.tag("<a class=\"card\" href=\"")
                h.text("/messages?status=" + s.rawValue)
                h.tag("\"><span class=\"figure\">")
                h.text(String(f.byStatus[s] ?? 0))
                h.tag("</span><span class=\"label\">")
                h.text(s.rawValue)
                h.tag("</span></a>")
            }
            h.tag("</section><table class=\"facts\"><tbody>")
            let lag = f.oldestDue.map { Self.age($0, now) } ?? "0s"
            Self.fact(&h, "due now", String(f.due))
            Self.fact(&h, "queue lag", lag)
            Self.fact(&h, "due, to suspended destinations", String(f.suspendedDue))
            h.tag("<tr><th>oldest waiting</th><td>")
            if let oldest {
                h.link("/messages/" + WebQuery.component(oldest.id), oldest.id)
                h.text(" (" + oldest.status.rawValue + ", " + Self.age(oldest.createdAt, now) + " old, to " + oldest.to + ")")
            } else {
                h.text("none")
            }
            h.tag("</td></tr></tbody></table><h2>Sent and failed per minute, the last hour</h2>")
            h.append(rates.chart(minutes: 60, bucket: 1, now: now))
            h.tag("<h2>The last day (per 15 minutes)</h2>")
            h.append(rates.chart(minutes: 1440, bucket: 15, now: now))
        }
    }

    /// How long ago `t` was, for a person: `2d3h`, `4m10s`, `12s`.
    static func age(_ t: Timestamp, _ now: Timestamp) -> String {
        let s = max(0, now.milliseconds - t.milliseconds) / 1000
        let (d, h, m) = (s / 86_400, s / 3600 % 24, s / 60 % 60)
        if d > 0 { return "\(d)d\(h)h" }
        if h > 0 { return "\(h)h\(m)m" }
        return m > 0 ? "\(m)m\(s % 60)s" : "\(s)s"
    }

    static func fact(_ h: inout HTML, _ name: String, _ value: String) {
        h.tag("<tr><th>")
        h.text(name)
        h.tag("</th><td>")
        h.text(value)
        h.tag("</td></tr>")
    }

    /// Destinations shown at most, in the order chosen.
    static let destinationRows = 500

    /// The columns of the destinations page, as `msg destinations` names them.
    static let destinationColumns = ["destination", "transport", "queued", "failed", "sending", "breaker", "failures", "next", "suspended", "throttle", "last_error"]

    func destinations(_ q: WebQuery) throws(MsgError) -> WebResponse {
        let now = Timestamp.now()
        let entries = try withStore { (s) throws(MsgError) in try Destinations(store: s).list() }
        let columns = Self.destinationColumns
        func at(_ name: String) -> Int { columns.firstIndex(of: name) ?? 0 }
        let rows: [[String]] = entries.map { e in
            var row = [String](repeating: "", count: columns.count)
            (row[at("destination")], row[at("transport")]) = (e.key, route(e.key).transport)
            (row[at("queued")], row[at("failed")], row[at("sending")], row[at("failures")]) =
                (String(e.queued), String(e.failed), String(e.sending), String(e.state.failures))
            // The rest as msg destinations words it.
            if case .object(let members) = Destinations.json(e, now: now) {
                for m in members {
                    switch (m.key, m.value) {
                    case ("breaker", .string(let b)): row[at("breaker")] = b
                    case ("next_probe", .string(let t)), ("paused_until", .string(let t)), ("next_token", .string(let t)): row[at("next")] = t
                    case ("throttle", .string(let t)): row[at("throttle")] = t
                    case ("suspended", .object(let inner)):
                        let reason = inner.first { $0.key == "reason" }.flatMap { if case .string(let r) = $0.value { r } else { nil } } ?? ""
                        let until = inner.first { $0.key == "until" }.flatMap { if case .string(let u) = $0.value { " until " + u } else { nil } } ?? ""
                        row[at("suspended")] = reason + until
                    case ("last_error", .object(let inner)):
                        row[at("last_error")] = inner.compactMap { if case .string(let v) = $0.value, $0.key != "at" { v } else { nil } }.joined(separator: ": ")
                    default: break
                    }
                }
            }
            return row
        }
        let sort = q["sort"].flatMap { columns.contains($0) ? $0 : nil } ?? "queued"
        let descending = (q["dir"] ?? (sort == "destination" || sort == "transport" ? "asc" : "desc")) == "desc"
        let column = at(sort)
        let numeric = ["queued", "failed", "sending", "failures"].contains(sort)
        // Each row's key made once, then sorted: by the column, then by name.
        let ordered = rows.map { (row: $0, n: numeric ? Int($0[column]) ?? 0 : 0) }.sorted { a, b in
            if numeric, a.n != b.n { return descending ? a.n > b.n : a.n < b.n }
            if !numeric, a.row[column] != b.row[column] { return descending ? a.row[column] > b.row[column] : a.row[column] < b.row[column] }
            return a.row[0] < b.row[0]
        }.map(\.row)
        return page(title: "msg: destinations") { h in
            h.tag("<h1>Destinations</h1><div class=\"scroll\"><table class=\"list\"><thead><tr>")
            for c in Self.destinationColumns {
                h.tag("<th>")
                let dir = c == sort && !descending ? "desc" : c == sort ? "asc" : (c == "destination" || c == "transport" ? "asc" : "desc")
                h.link("/destinations?" + WebQuery.encode([("sort", c), ("dir", dir)]), c.replacingOccurrences(of: "_", with: " ") + (c == sort ? (descending ? " ▼" : " ▲") : ""))
                h.tag("</th>")
            }
            if options.allowActions { h.tag("<th>action</th>") }
            h.tag("</tr></thead><tbody>")
            for row in ordered.prefix(Self.destinationRows) {
                h.tag("<tr>")
                for (i, value) in row.enumerated() {
                    h.tag("<td>")
                    if i == 0 {
                        h.link("/messages?" + WebQuery.encode([("to", value)]), value)
                    } else {
                        h.text(value)
                    }
                    h.tag("</td>")
                }
                if options.allowActions {
                    let d = row[0]
                    h.tag("<td>")
                    if !row[at("suspended")].isEmpty {
                        actionForm(&h, "/destinations/" + WebQuery.component(d) + "/resume", "resume", reason: false)
                    } else {
                        actionForm(&h, "/destinations/" + WebQuery.component(d) + "/suspend", "suspend", reason: true)
                    }
                    h.tag("</td>")
                }
                h.tag("</tr>")
            }
            h.tag("</tbody></table></div>")
            if rows.isEmpty { h.tag("<p>No destination has a message waiting, in flight or a state of its own.</p>") }
            if rows.count > Self.destinationRows {
                h.tag("<p>")
                h.text("The first \(Self.destinationRows) of \(rows.count) destinations by this order; msg destinations lists them all.")
                h.tag("</p>")
            }
        }
    }

    /// A form that POSTs to `action` with the session token (and a reason when asked).
    func actionForm(_ h: inout HTML, _ action: String, _ label: String, reason: Bool) {
        h.tag("<form method=\"post\" class=\"action\" action=\"")
        h.text(action)
        h.tag("\"><input type=\"hidden\" name=\"token\" value=\"")
        h.text(sessionToken)
        h.tag("\">")
        if reason { h.tag("<input name=\"reason\" placeholder=\"reason\" maxlength=\"1024\" required>") }
        h.tag("<button type=\"submit\">")
        h.text(label)
        h.tag("</button></form>")
    }

    /// Messages a page.
    static let pageSize = 50

    func messages(_ q: WebQuery) throws(MsgError) -> WebResponse {
        var query = Query()
        var filter = MessageFilter()
        if let s = q["status"] {
            guard let status = Status(rawValue: s) else { throw MsgError(.usage, "status=\(s) is not a status (\(Status.allCases.map(\.rawValue).joined(separator: ", ")))") }
            query.statuses = [status]
        }
        if let to = q["to"] {
            if MessageFilter.isPattern(to) { filter.toPattern = to } else { query.to = to }
        }
        if let header = q["header"] {
            let kv = header.split(separator: "=", maxSplits: 1)
            filter.header = (String(kv[0]), kv.count > 1 ? String(kv[1]) : nil)
        }
        if let error = q["error"] { filter.lastError = try MessageFilter.ErrorMatch(parsing: error) }
        if let a = q["attempts"] {
            guard let n = Int(a), n >= 0 else { throw MsgError(.usage, "attempts=\(a) is not a count") }
            filter.minAttempts = n
        }
        // The cursor: the created time and id of the last message shown; FIFO order
        // resumes after it, from the index, never by OFFSET.
        var after: (Int64, String)?
        if let cursor = q["after"] {
            guard let dash = cursor.firstIndex(of: "-"), let ms = Int64(cursor[..<dash]) else { throw MsgError(.usage, "after=\(cursor) is not a cursor of this page") }
            after = (ms, String(cursor[cursor.index(after: dash)...]))
            query.since = Timestamp(milliseconds: ms)
        }
        let found = try withStore { (s) throws(MsgError) -> [Message] in
            var found: [Message] = []
            try s.list(query) { (r) throws(MsgError) -> Bool in
                let m = r.message
                if let (ms, id) = after, m.createdAt.milliseconds == ms, m.id <= id { return true }
                if filter.matches(m) { found.append(m) }
                return found.count <= Self.pageSize
            }
            return found
        }
        return page(title: "msg: messages") { h in
            h.tag("<h1>Messages</h1><form method=\"get\" action=\"/messages\" class=\"filters\"><label>status <select name=\"status\"><option value=\"\">any</option>")
            for s in Status.allCases {
                h.tag("<option")
                if q["status"] == s.rawValue { h.tag(" selected") }
                h.tag(">")
                h.text(s.rawValue)
                h.tag("</option>")
            }
            h.tag("</select></label>")
            for (name, hint) in [("to", "recipient or pattern"), ("header", "NAME or NAME=VALUE"), ("error", "code or none"), ("attempts", "at least")] {
                h.tag("<label>")
                h.text(name)
                h.tag(" <input name=\"")
                h.text(name)
                h.tag("\" value=\"")
                h.text(q[name] ?? "")
                h.tag("\" placeholder=\"")
                h.text(hint)
                h.tag("\"></label>")
            }
            h.tag("<button type=\"submit\">Filter</button></form><div class=\"scroll\"><table class=\"list\"><thead><tr><th>id</th><th>status</th><th>to</th><th>attempts</th><th>created</th><th>last error</th></tr></thead><tbody>")
            for m in found.prefix(Self.pageSize) {
                h.tag("<tr><td>")
                h.link("/messages/" + WebQuery.component(m.id), m.id, class: "id")
                h.tag("</td>")
                h.element("td", m.status.rawValue, class: "status")
                h.element("td", m.to)
                h.element("td", String(m.attempts))
                h.element("td", m.createdAt.description)
                h.element("td", m.standingError.map { $0.code + ": " + $0.message } ?? "")
                h.tag("</tr>")
            }
            h.tag("</tbody></table></div>")
            if found.isEmpty { h.tag("<p>No message matches.</p>") }
            if found.count > Self.pageSize, let last = found.dropLast().last {
                h.tag("<p class=\"pager\">")
                h.link("/messages?" + q.with("after", "\(last.createdAt.milliseconds)-\(last.id)"), "Next page →")
                h.tag("</p>")
            }
        }
    }

    func message(_ id: String) throws(MsgError) -> WebResponse {
        let now = Timestamp.now()
        let (m, why, ledger) = try withStore { (s) throws(MsgError) -> (Message, String?, String) in
            guard let m = try s.get(id)?.message else { throw MsgError(.notFound, "no message with id \(id)") }
            let why = [.queued, .failed, .held].contains(m.status) ? try Destinations(store: s).why(m, now: now) : nil
            let ledger = try Self.ledgerSize(s).map { "kept: this message and each change of it are leaves of the store's ledger of \($0) leaves" }
                ?? "this store keeps no ledger"
            return (m, why, ledger)
        }
        return page(title: "msg: " + m.id) { h in
            h.tag("<h1>Message</h1><table class=\"facts\"><tbody>")
            Self.fact(&h, "id", m.id)
            Self.fact(&h, "status", m.status.rawValue + (m.attempts > 0 ? ", \(m.attempts) attempt\(m.attempts == 1 ? "" : "s")" : ""))
            Self.fact(&h, "to", m.to)
            if let from = m.from { Self.fact(&h, "from", from) }
            Self.fact(&h, "created", m.createdAt.description)
            Self.fact(&h, "updated", m.updatedAt.description)
            if let due = m.dueAt, [.queued, .failed].contains(m.status) { Self.fact(&h, "next attempt", due.description) }
            if let expires = m.expiresAt { Self.fact(&h, "expires", expires.description) }
            Self.fact(&h, "why not sent", why ?? (m.status == .queued || m.status == .failed ? "due: the next flush sends it" : "it is " + m.status.rawValue))
            Self.fact(&h, "route", route(m.to).line)
            Self.fact(&h, "ledger", ledger)
            if let lease = m.lease { Self.fact(&h, "lease", "\(lease.host) pid \(lease.pid) until \(lease.until)") }
            if let e = m.standingError { Self.fact(&h, "last error", e.code + ": " + e.message) }
            for header in m.headers { Self.fact(&h, "header " + header.key, header.value) }
            for member in m.extra {
                var w = JSONWriter()
                w.value(member.value)
                Self.fact(&h, member.key, String(decoding: w.bytes, as: UTF8.self))
            }
            h.tag("</tbody></table>")
            if options.allowActions {
                h.tag("<div class=\"actions\">")
                let base = "/messages/" + WebQuery.component(m.id)
                switch m.status {
                case .dead: actionForm(&h, base + "/retry", "retry (back to queued)", reason: true)
                case .queued, .failed: actionForm(&h, base + "/hold", "hold", reason: true)
                case .held: actionForm(&h, base + "/release", "release", reason: true)
                default: break
                }
                h.tag("</div>")
            }
            h.tag("<h2>Body</h2><pre class=\"body\">")
            h.text(m.body)
            h.tag("</pre><h2>History</h2><ol class=\"timeline\">")
            for e in m.history {
                h.tag("<li><time>")
                h.text(e.at.description)
                h.tag("</time> <span class=\"event\">")
                h.text(e.event)
                h.tag("</span> <span class=\"status\">")
                h.text(e.status.rawValue)
                h.tag("</span>")
                if let error = e.error {
                    h.tag(" <span class=\"error\">")
                    h.text(error.code + ": " + error.message)
                    h.tag("</span>")
                }
                for x in e.extra {
                    var w = JSONWriter()
                    w.value(x.value)
                    h.tag(" <span class=\"extra\">")
                    h.text(x.key + "=" + String(decoding: w.bytes, as: UTF8.self))
                    h.tag("</span>")
                }
                h.tag("</li>")
            }
            h.tag("</ol>")
        }
    }

    /// Dead messages read for the dead letters page, at most.
    static let deadScan = 100_000

    func dead() throws(MsgError) -> WebResponse {
        struct Group { var count = 0; var newest = Timestamp(milliseconds: 0); var example = "" }
        let (groups, read) = try withStore { (s) throws(MsgError) -> ([String: Group], Int) in
            var groups: [String: Group] = [:]
            var read = 0
            try s.list(Query(statuses: [.dead])) { (r) throws(MsgError) -> Bool in
                let m = r.message
                let reason = m.standingError.map { $0.code + ": " + String($0.message.prefix(160)) } ?? "(no error recorded)"
                groups[reason, default: Group()].count += 1
                if m.updatedAt > groups[reason]!.newest { (groups[reason]!.newest, groups[reason]!.example) = (m.updatedAt, m.id) }
                read += 1
                return read < Self.deadScan
            }
            return (groups, read)
        }
        return page(title: "msg: dead letters") { h in
            h.tag("<h1>Dead letters</h1><div class=\"scroll\"><table class=\"list\"><thead><tr><th>messages</th><th>reason</th><th>newest</th><th>show</th></tr></thead><tbody>")
            for (reason, g) in groups.sorted(by: { ($0.value.count, $1.key) > ($1.value.count, $0.key) }) {
                h.tag("<tr>")
                h.element("td", String(g.count))
                h.element("td", reason, class: "reason")
                h.tag("<td>")
                h.link("/messages/" + WebQuery.component(g.example), g.newest.description)
                h.tag("</td><td>")
                let code = reason.split(separator: ":").first.map(String.init) ?? ""
                h.link("/messages?" + WebQuery.encode([("status", "dead"), ("error", MessageFilter.errorCodes.contains(code) ? code : "none")]), "all")
                h.tag("</td></tr>")
            }
            h.tag("</tbody></table></div>")
            if groups.isEmpty { h.tag("<p>No dead message.</p>") }
            if read >= Self.deadScan { h.tag("<p>The first 100,000 dead messages are grouped here.</p>") }
        }
    }
}
