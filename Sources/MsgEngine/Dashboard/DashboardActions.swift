import MsgKit
import Synchronization

/// What the page may change with `--allow-actions`, each as the CLI does it, so
/// each lands in the message's history (or the destination's state) as the CLI's:
/// `retry` a dead message (`msg retry --dead`), `hold` and `release`
/// (`msg queue hold|release`), `suspend` and `resume` a destination.
extension Dashboard {
    func act(_ parts: [String], form: WebQuery) throws(MsgError) -> WebResponse {
        let reason = form["reason"]
        if let reason, reason.utf8.count > 1024 { throw MsgError(.usage, "a reason is at most 1024 bytes") }
        defer { cache.clear() }
        let now = Timestamp.now()
        switch (parts.first, parts.count, parts.last) {
        case ("messages", 3, let verb?):
            let id = parts[1]
            let said = Mutex<[String]>([])
            let reporter = Reporter { line in said.withLock { $0.append(line) } }
            let outcome = try withStore { (s) throws(MsgError) -> QueueOperations.Outcome? in
                let operations = QueueOperations(store: s, now: now, reporter: reporter)
                switch verb {
                case "hold": return try operations.hold([id], reason: reason)
                case "release": return try operations.release([id], reason: reason)
                case "retry":
                    guard try s.get(id)?.message.status == .dead else {
                        throw MsgError(.invalidTransition, "\(id) is not dead: a failed message is retried by the next flush at its time (msg retry --now sends it now)")
                    }
                    let (moved, damaged) = try Redrive.run(store: s, targets: [id], now: now, reason: reason) { (_) throws(MsgError) in }
                    if !damaged.isEmpty { throw MsgError(.invalidTransition, "\(id) is a damaged record (msg-record(5)); fix its text and add it again") }
                    if moved == 0 { throw MsgError(.invalidTransition, "\(id) was not redriven: it is no longer dead") }
                    return nil
                default: throw MsgError(.notFound, "no action \(verb)")
                }
            }
            if let outcome, outcome.problems > 0 {
                throw MsgError(.invalidTransition, said.withLock { $0 }.joined(separator: "; "))
            }
            self.reporter.say("web: \(verb) \(id)" + (reason.map { " (\($0))" } ?? ""))
            return Self.redirect("/messages/" + WebQuery.component(id))
        case ("destinations", 3, "suspend"):
            guard let reason else { throw MsgError(.usage, "a suspension needs a reason") }
            try withStore { (s) throws(MsgError) in
                let destinations = Destinations(store: s)
                try destinations.refusePattern(parts[1], command: "suspend")
                _ = try destinations.suspend(parts[1], until: nil, reason: reason, now: now)
            }
            self.reporter.say("web: suspend \(parts[1]) (\(reason))")
            return Self.redirect("/destinations")
        case ("destinations", 3, "resume"):
            _ = try withStore { (s) throws(MsgError) in try Destinations(store: s).resume(parts[1], now: now) }
            self.reporter.say("web: resume \(parts[1])" + (reason.map { " (\($0))" } ?? ""))
            return Self.redirect("/destinations")
        default:
            throw MsgError(.notFound, "no action at /" + parts.joined(separator: "/"))
        }
    }
}
