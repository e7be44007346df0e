#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// The one place an outcome is written and said. It records a slice's outcomes in
/// one commit (``settle(_:_:run:into:)``; compare-and-set: written again after an
/// outage, an outcome is never recorded twice) and carries out what the run's state
/// machine decided of them (``FlushRun/recorded(_:applied:now:)``); it puts back
/// exactly as they were the messages a run takes back (``putBack(_:)``); it counts,
/// prints and emits each outcome, and the messages a claim found expired
/// (``expired(_:into:)``). It decides nothing; no other unit writes an outcome.
///
/// Printing: when standard output fails (closed: EPIPE, as SIGPIPE is ignored
/// while flushing; or any other error, kept in ``outputError`` and thrown at the
/// end), it prints no more and tells the stop request; the outcomes are recorded
/// all the same and nothing is left `sending`.
package final class OutcomeDesk {
    private let store: any Store
    /// What names a message's destination (for what the desk says of it).
    private let key: DestinationKey
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

    package init(store: any Store, rules: DeliveryRules, faults: FaultPoints, clock: @escaping @Sendable () -> Timestamp,
         writer: NDJSONWriter, reporter: Reporter, events: EventSink?, outcomeLog: OutcomeLog?, stop: StopRequest) {
        self.store = store
        key = rules.key
        self.faults = faults
        self.clock = clock
        self.writer = writer
        self.reporter = reporter
        self.events = events
        self.outcomeLog = outcomeLog
        self.stop = stop
    }

    /// One slice's outcomes: recorded in one commit, the run told which applied
    /// (``FlushRun/recorded(_:applied:now:)``), and what it answers carried out:
    /// each message told, destinations' caution set, what waits for a destination
    /// held taken back from `scheduler` and put back, the workers let go on.
    package func settle(_ o: Dispatcher.Outcomes, _ scheduler: some WaitingMessages, run: inout FlushRun,
                        into summary: inout Flusher.Summary) throws(MsgError) {
        let applied = try store.update(o.changes)
        faults.pass(.afterSent, count: o.changes.count)
        let effects = run.recorded(o, applied: applied, now: clock())
        tell(o, effects.compactMap { if case .tell(let i, let verdict) = $0 { (i, verdict) } else { nil } }, into: &summary)
        for effect in effects {
            switch effect {
            case .tell: break
            case .caution(let key, let on): scheduler.setCautious(key, on)
            case .withdraw(let key):
                let back = scheduler.withdraw(key)
                run.withdrew(back)
                _ = try putBack(back)
            case .done(let keys): scheduler.done(keys)
            }
        }
    }

    /// Counts, prints and tells what the run decided of a recorded slice's messages
    /// (its ``FlushRun/Effect/tell(_:_:)`` effects).
    private func tell(_ o: Dispatcher.Outcomes, _ verdicts: [(Int, FlushRun.Verdict)], into summary: inout Flusher.Summary) {
        guard !verdicts.isEmpty else { return }
        writer.flushEveryLine = false
        let now = clock()
        for (i, verdict) in verdicts {
            let r = o.changes[i].record
            let key = o.items[i].key
            switch verdict {
            case .released:
                summary.released += 1
            case .dead:
                died(r, destination: key, now: now, into: &summary)
            case .sent:
                summary.sent += 1
                summary.settle(r.id, failing: false)
                said(r, destination: key, now: now)
            case .deferred:
                summary.deferred += 1
                summary.settle(r.id, failing: true)
                summary.lastFailure = r.message.lastError
                said(r, destination: key, now: now)
            }
        }
        writeOut { () throws(MsgError) in try writer.finish() }
    }

    /// Puts claimed messages back exactly as they were before their claim (a stop,
    /// a destination held).
    /// - Returns: how many were put back.
    package func putBack(_ items: [Claimer.Claimed]) throws(MsgError) -> Int {
        guard !items.isEmpty else { return 0 }
        return try store.update(items.map { Change($0.original, expected: .sending) }).filter { $0 }.count
    }

    /// The messages a claim found expired (stored dead by the claim): counted,
    /// printed, told.
    package func expired(_ records: [EncodedMessage], into summary: inout Flusher.Summary) {
        guard !records.isEmpty else { return }
        writer.flushEveryLine = false
        let now = clock()
        for r in records { died(r, destination: key.of(r), now: now, into: &summary) }
        writeOut { () throws(MsgError) in try writer.finish() }
    }

    /// A message made dead (its attempts spent, a permanent failure, its expiry):
    /// counted, emitted, told and printed.
    private func died(_ r: EncodedMessage, destination: String, now: Timestamp, into summary: inout Flusher.Summary) {
        summary.dead += 1
        summary.settle(r.id, failing: false)
        summary.lastFailure = r.message.lastError
        events?.emit(.dead(r.message, destination: destination, at: now))
        said(r, destination: destination, now: now)
    }

    /// What the run says of a recorded outcome: the outcome log's line on stderr
    /// (`flush --watch`), and the record as just stored, without history, from the
    /// same encoding.
    private func said(_ r: EncodedMessage, destination: String, now: Timestamp) {
        if outcomeLog != nil, let line = outcomeLog?.outcome(r.message, destination: destination, now: now) { reporter.say(line) }
        writeOut { () throws(MsgError) in try writer.writeWithoutHistory(r) }
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
