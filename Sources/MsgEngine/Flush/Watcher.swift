#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// `flush --watch`: flushes what is due, then waits for new work, the next due
/// time or a stop, and flushes again.
///
/// Waiting costs next to nothing: the store's change token (``Store/changeToken()``:
/// SQLite's `PRAGMA data_version`, read from shared memory) is looked at every
/// `look` (5 ms), so a message another process enqueues is attempted within a few
/// milliseconds, and nothing is decoded while the queue is unchanged; the next due
/// time comes from the store's index (``Store/nextDue(_:after:)``). A store that
/// cannot tell cheaply is looked at every `poll`. Inboxes (``Inboxes``) are taken
/// in before each run and looked at every `look` too (PostgreSQL's by LISTEN, so
/// a look costs no round trip; SQLite's by `PRAGMA data_version`).
///
/// The two signals are blocked and waited for with `sigtimedwait` while waiting,
/// so no handler or global flag is needed. One that arrives during a flush stops it
/// at its next transport call (see ``Flusher/run(progress:)``): the outcomes in
/// flight are recorded, the rest goes back to the queue, and a message is never
/// left half-sent by it. A closed standard output stops it the same way.
public struct Watcher {
    private let poll: MsgDuration
    private let look: MsgDuration

    /// A watcher that looks for new work at least every `poll`, and at the store's
    /// change token every `look`.
    public init(poll: MsgDuration = .seconds(1), look: MsgDuration = MsgDuration(milliseconds: 5)) {
        self.poll = poll
        self.look = look
    }

    /// Runs `flusher` until a signal or a closed output. - Throws: store errors.
    /// Takes `inboxes` in before each run, and looks at them as at the store's token.
    public func run(_ flusher: Flusher, inboxes: Inboxes? = nil, clock: () -> Timestamp = { Timestamp.now() }) throws(MsgError) -> Flusher.Summary {
        let inboxes = inboxes.flatMap { $0.isEmpty ? nil : $0 }
        let signals = StopSignals()
        defer { signals.restore() }
        var total = Flusher.Summary()
        do throws(MsgError) {
            while true {
                // Read before the run: what another process commits during it (after the
                // run's last claim) then shows as a change, and is flushed at once.
                let token = try flusher.changeToken()
                try inboxes?.drain(ridingOut: true)
                total.add(try flusher.run(countingMessages: true))
                if total.stopped == .closedOutput || total.misconfigured != nil { return total }
                var until = clock().milliseconds + poll.milliseconds
                if let due = try flusher.nextDue() { until = min(until, due.milliseconds) }
                while true {
                    let left = until - clock().milliseconds
                    if left <= 0 { break }
                    let looks = token != nil || inboxes != nil
                    if let signal = signals.wait(milliseconds: looks ? min(left, look.milliseconds) : left) {
                        total.stopped = .signal(signal)
                        return total
                    }
                    if let token, try flusher.changeToken() != token { break }
                    if let inboxes, try inboxes.changed() { break }
                }
            }
        } catch where error.code == .unreachable && flusher.stop.reason != nil {
            // Stopped as asked while the store was away: said, and the watch ends.
            flusher.reporter.say(error.message)
            total.stopped = flusher.stop.reason
            // Taken, as the wait above takes one: it ends the watch, not the process.
            _ = signals.wait(milliseconds: 0)
            return total
        }
    }
}
