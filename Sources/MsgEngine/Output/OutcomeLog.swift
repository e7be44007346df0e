import MsgKit

/// What `flush --watch` says on stderr as it goes, for the journal (docs/DESIGN.md
/// 6): a line per failure, deferral and dead message, at most one a destination
/// every ``interval`` (the lines held back are counted in the next), and a line
/// when a destination that failed delivers again. Quiet while all is well. Lines
/// are one line each, no colour, fit for journald.
public struct OutcomeLog: Sendable {
    /// The least time between two lines about one destination's failures.
    public let interval: MsgDuration

    private struct Failing: Sendable {
        var since: Timestamp
        var failures = 0
        var dead = 0
        var lastLine: Timestamp?
        /// Failures and dead messages not told yet.
        var untoldFailures = 0
        var untoldDead = 0
    }

    private var failing: [String: Failing] = [:]

    public init(interval: MsgDuration = .seconds(60)) {
        self.interval = interval
    }

    /// The line for `m`'s outcome at `destination`, if one is due; `m` as just stored.
    public mutating func outcome(_ m: Message, destination: String, now: Timestamp) -> String? {
        switch m.status {
        case .sent, .delivered:
            guard let f = failing.removeValue(forKey: destination) else { return nil }
            let span = MsgDuration(milliseconds: max(0, now.milliseconds - f.since.milliseconds))
            return "destination \(destination): delivering again after \(f.failures) failure\(f.failures == 1 ? "" : "s") in \(HumanDuration.text(span))"
                + (f.dead > 0 ? ", \(f.dead) dead" : "")
        case .failed, .dead:
            var f = failing[destination] ?? Failing(since: now)
            f.failures += 1
            let dead = m.status == .dead
            if dead { f.dead += 1 }
            if let last = f.lastLine, now.milliseconds - last.milliseconds < interval.milliseconds {
                f.untoldFailures += dead ? 0 : 1
                f.untoldDead += dead ? 1 : 0
                failing[destination] = f
                return nil
            }
            let untold = (f.untoldFailures, f.untoldDead)
            f.lastLine = now
            f.untoldFailures = 0
            f.untoldDead = 0
            failing[destination] = f
            // One line whatever a receiver said (its reply may hold line breaks).
            let error = String((m.lastError.map { "\($0.code): \($0.message)" } ?? "no error given").map { $0.isNewline || $0 == "\t" ? " " : $0 })
            var line = "destination \(destination): \(m.id) "
            if dead {
                line += "dead after \(m.attempts) attempt\(m.attempts == 1 ? "" : "s"): \(error)"
            } else {
                let next = m.nextAttemptAt.map { "; next attempt at \($0)" } ?? ""
                line += "failed (attempt \(m.attempts)): \(error)\(next)"
            }
            if untold.0 + untold.1 > 0 {
                line += " (and since the last line: \(untold.0) more failed, \(untold.1) dead)"
            }
            return line
        default:
            return nil
        }
    }
}
