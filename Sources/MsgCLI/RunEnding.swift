import MsgEngine
import MsgKit

/// How a `flush` or `retry` run ends, written once for both: the holds said, the
/// ledger's checkpoint signed, the given ids not taken and the damaged records
/// named, then the exit status (a stop on request, the transport misconfigured,
/// bad input lines, or what the run did).
struct RunEnding {
    /// The status the run takes (`queued` for flush, `failed` for retry).
    var taking: Status
    /// What to do about a given message not yet due ("" for nothing).
    var notDue: String
    /// What to do about a given message of another status, by status.
    var other: [Status: String]
    /// Whether the ids were given (not chosen by a filter).
    var explicit: Bool
    var badLines: Int
    /// `flush --watch`: stopped as asked, it has done its job (exit 0), and its
    /// holds were said as they came.
    var watch = false
    /// Whether the records went to a terminal, where they are not printed: then a
    /// run that went well says what it did too.
    var onTerminal = false

    func end(_ summary: Flusher.Summary, _ session: Session, checkpoint: CheckpointOptions, seed: [UInt8]?) throws {
        if !watch { summary.reportHolds(to: session.reporter) }
        try checkpoint.write(seed, session)
        let noneTaken = try reportNotTaken(summary, session, taking: taking, notDue: notDue, other: other, explicit: explicit)
        summary.reportDamaged(in: session.settings.store, to: session.reporter)
        // Stopped on request: SIGINT or SIGTERM ends --watch as asked (exit 0); it
        // interrupts a plain run, which then ends as the signal would have ended it.
        if let stopped = summary.stopped {
            if stopped != .closedOutput, let line = summary.stopLine { session.console.say(line) }
            return try finish(watch && stopped != .closedOutput ? 0 : stopped.exitStatus)
        }
        if let line = summary.failureLine ?? (onTerminal ? summary.doneLine : nil) { session.console.say(line) }
        // The transport cannot deliver as configured: what was not attempted is back
        // in the queue as it was; the error is the command's (78).
        if let error = summary.misconfigured { throw error }
        try finish(badLines > 0 || noneTaken ? 65 : summary.exitCode)
    }
}

/// Says why each given id that `flush` or `retry` did not take was left (up to ten,
/// then a count): no such message, another status, or not due yet. Of messages a
/// filter chose (`explicit` false), only how many were not due, on one line.
/// - Returns: whether none of the given ids could be taken (then the exit is 65).
/// `notDue` and `other` add what to do instead, when there is something.
private func reportNotTaken(_ summary: Flusher.Summary, _ session: Session, taking status: Status, notDue: String,
                    other: [Status: String], explicit: Bool = true) throws -> Bool {
    guard !summary.notTaken.isEmpty else { return false }
    guard explicit else {
        let n = summary.notTaken.count
        let now = status == .failed ? "; retry --now sends them now" : ""
        session.reporter.say("\(n) matching message\(n == 1 ? " was" : "s were") not taken: not due yet, or changed meanwhile\(now)")
        return false
    }
    let store = try session.store(.read)
    for id in summary.notTaken.prefix(10) {
        guard let m = try store.get(id)?.message else {
            session.reporter.say("\(id): no such message")
            continue
        }
        if m.status != status {
            session.reporter.say("\(id): it is \(m.status.rawValue), not \(status.rawValue)\(other[m.status].map { "; " + $0 } ?? "")")
        } else if let due = m.dueAt {
            session.reporter.say("\(id): not due until \(due)\(notDue.isEmpty ? "" : "; " + notDue)")
        }
    }
    if summary.notTaken.count > 10 { session.reporter.say("… and \(summary.notTaken.count - 10) more given messages not taken") }
    return summary.sent + summary.deferred + summary.dead == 0
}
