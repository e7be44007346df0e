#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// The one place an outcome is handled (Postfix's `qmgr_deliver_update()` is the
/// model: one function takes a delivery's status and does all it means).
///
/// For each slice the workers hand back (``settle(_:_:notes:into:)``) it records the
/// outcomes in one commit (compare-and-set: written again after an outage, an
/// outcome is never recorded twice), frees each destination, or holds one whose
/// breaker opened or that asked for a pause and puts back untouched what waits for
/// it, sets each destination's caution, re-arms the scan behind what went back,
/// notes what the outcomes teach for the next claim (``RunNotes``), counts, and
/// prints and emits what the run says of them. A stop's put-back
/// (``putBack(_:notes:)``) and the messages a claim found expired
/// (``expired(_:into:)``) come here too. No other unit writes an outcome.
///
/// Printing: when standard output fails (closed: EPIPE, as SIGPIPE is ignored
/// while flushing; or any other error, kept in ``outputError`` and thrown at the
/// end), it prints no more and tells the stop request; the outcomes are recorded
/// all the same and nothing is left `sending`.
package final class OutcomeDesk {
    private let store: any Store
    private let book: DestinationBook
    private let faults: FaultPoints
    private let clock: @Sendable () -> Timestamp
    private let writer: NDJSONWriter
    private let reporter: Reporter
    private let events: EventSink?
    /// What `flush --watch` says on stderr as it goes; the run's shell keeps it from
    /// one run to the next.
    package private(set) var outcomeLog: OutcomeLog?
    private let stop: StopRequest
    /// The first error writing to standard output other than its being closed.
    package private(set) var outputError: MsgError?
    /// Destinations failing lately, handed out one message at a time (so that a
    /// breaker sees each outcome); kept here too, so that a success costs the
    /// scheduler's lock only when one is.
    private var cautious: Set<String> = []

    package init(store: any Store, rules: DeliveryRules, faults: FaultPoints, clock: @escaping @Sendable () -> Timestamp,
         writer: NDJSONWriter, reporter: Reporter, events: EventSink?, outcomeLog: OutcomeLog?, stop: StopRequest) {
        self.store = store
        book = DestinationBook(rules: rules)
        self.faults = faults
        self.clock = clock
        self.writer = writer
        self.reporter = reporter
        self.events = events
        self.outcomeLog = outcomeLog
        self.stop = stop
    }

    /// One slice's outcomes, recorded and all they mean done; `notes` and `scan` are
    /// the run's, lent.
    /// - Returns: how many messages waiting for a worker were taken back (a breaker
    ///   opened, a destination asked for a pause) and put back as they were.
    package func settle(_ o: Dispatcher.Outcomes, _ scheduler: some WaitingMessages, notes: inout RunNotes, scan: inout ClaimScan,
                        into summary: inout Flusher.Summary) throws(MsgError) -> Int {
        let applied = try store.update(o.changes)
        faults.pass(.afterSent, count: o.changes.count)
        writer.flushEveryLine = false
        let now = clock()
        for (i, (change, ok)) in zip(o.changes, applied).enumerated() {
            let item = o.items[i]
            let status = change.record.message.status
            // Put back as it was (not attempted): due again, behind the scan.
            if ok && o.outcomes[i] == nil && status != .dead { scan.putBehind(item.key) }
            release(item, &notes, &scan)
            guard ok else { continue }
            guard let outcome = o.outcomes[i] else {
                if status == .dead {
                    died(change.record, destination: item.key, now: now, into: &summary)  // expired before its turn
                } else {
                    summary.released += 1  // put back as it was: nothing to print
                }
                continue
            }
            learn(outcome, of: item, now: now, notes: &notes)
            if case .failed = outcome {
                if cautious.insert(item.key).inserted { scheduler.setCautious(item.key, true) }
            } else if !cautious.isEmpty, !o.failedKeys.contains(item.key), cautious.remove(item.key) != nil {
                scheduler.setCautious(item.key, false)
            }
            switch status {
            case .sent, .delivered:
                summary.sent += 1
                summary.settle(change.record.message.id, failing: false)
                said(change.record, destination: item.key, now: now)
            case .dead:
                died(change.record, destination: item.key, now: now, into: &summary)
            default:
                summary.deferred += 1
                summary.settle(change.record.message.id, failing: true)
                summary.lastFailure = change.record.message.lastError
                said(change.record, destination: item.key, now: now)
            }
        }
        writeOut { () throws(MsgError) in try writer.finish() }
        // A destination whose breaker opened or that asked for a pause: what waits
        // for it goes back to the queue untouched.
        var withdrawn = 0
        for key in o.failedKeys where holds(key, notes, &scan) {
            let back = scheduler.withdraw(key)
            withdrawn += back.count
            _ = try putBack(back, notes: &notes, scan: &scan)
        }
        scheduler.done(o.failedKeys)
        return withdrawn
    }

    /// Puts claimed messages back exactly as they were before their claim (a stop,
    /// a destination held).
    /// - Returns: how many were put back.
    package func putBack(_ items: [Claimer.Claimed], notes: inout RunNotes, scan: inout ClaimScan) throws(MsgError) -> Int {
        guard !items.isEmpty else { return 0 }
        let applied = try store.update(items.map { Change($0.original, expected: .sending) })
        // Queued again where the scan has been: what a breaker or a pause puts back
        // is held in the scan until its time (a wake that starts it again); what a
        // stop puts back ends the run.
        for item in items {
            scan.putBehind(item.key)
            release(item, &notes, &scan)
        }
        return applied.filter { $0 }.count
    }

    /// The messages a claim found expired (stored dead by the claim): counted,
    /// printed, told.
    package func expired(_ records: [EncodedMessage], into summary: inout Flusher.Summary) {
        guard !records.isEmpty else { return }
        writer.flushEveryLine = false
        let now = clock()
        for r in records { died(r, destination: book.rules.key.of(r.message), now: now, into: &summary) }
        writeOut { () throws(MsgError) in try writer.finish() }
    }

    /// A message's outcome (or put-back) is recorded: no longer in flight, and its
    /// destination free in the scan (a hold that ends by itself, a pause or a
    /// cool-down, is woken by its time).
    private func release(_ item: Claimer.Claimed, _ notes: inout RunNotes, _ scan: inout ClaimScan) {
        notes.settled(item.record.message.id, key: item.key)
        scan.free(item.key)
    }

    /// Notes what an outcome says about its destination: for the store at the next
    /// claim, and for this run at once.
    private func learn(_ outcome: DeliveryOutcome, of c: Claimer.Claimed, now: Timestamp, notes: inout RunNotes) {
        // With every message its own destination there is nothing to learn; nor from a
        // success at a destination with nothing to forget (the common case, kept cheap).
        if book.rules.key == .id { return }
        if case .delivered = outcome, !c.probe, notes.known.isEmpty || (notes.known[c.key]?.isEmpty ?? true) { return }
        let book = self.book.of(c.key)
        for lesson in book.lessons(outcome, id: c.record.message.id, probe: c.probe, now: now) {
            notes.lessons.append((c.key, lesson))
            var s = notes.known[c.key] ?? DestinationState()
            _ = book.learn(lesson, into: &s, key: c.key, now: now)
            notes.known[c.key] = s
        }
    }

    /// Whether what waits for `key` must go back untouched: its breaker opened or it
    /// asked for a pause. Then the scan holds it too, until the hold ends.
    private func holds(_ key: String, _ notes: RunNotes, _ scan: inout ClaimScan) -> Bool {
        guard let s = notes.known[key] else { return false }
        guard case .hold(let hold) = book.of(key).verdict(s, busy: false, probeInFlight: false, now: clock()), hold.putsBack else { return false }
        scan.hold(key, hold, counting: false)
        return true
    }

    /// A message made dead (its attempts spent, a permanent failure, its expiry):
    /// counted, emitted, told and printed.
    private func died(_ r: EncodedMessage, destination: String, now: Timestamp, into summary: inout Flusher.Summary) {
        summary.dead += 1
        summary.settle(r.message.id, failing: false)
        summary.lastFailure = r.message.lastError
        events?.emit(.dead(r.message, destination: destination, at: now))
        said(r, destination: destination, now: now)
    }

    /// What the run says of a recorded outcome: the outcome log's line on stderr
    /// (`flush --watch`), and the record as just stored, without history, from the
    /// same encoding.
    private func said(_ r: EncodedMessage, destination: String, now: Timestamp) {
        if outcomeLog != nil, let line = outcomeLog?.outcome(r.message, destination: destination, now: now) { reporter.say(line) }
        writeOut { () throws(MsgError) in try writer.writeRaw(r.jsonWithoutHistory) }
    }

    /// Runs a write to standard output unless it has failed before.
    private func writeOut(_ write: () throws(MsgError) -> Void) {
        guard !stop.outputIsClosed && outputError == nil else { return }
        do throws(MsgError) {
            try write()
        } catch {
            if (error.underlying as? Errno)?.rawValue != EPIPE { outputError = error }
            stop.outputClosed()
        }
    }
}
