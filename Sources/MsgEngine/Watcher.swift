#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// `flush --watch`: flushes what is due, sleeps until the next due time (at most
/// `poll`, to notice new work), and stops cleanly on SIGINT or SIGTERM.
///
/// The two signals are blocked and waited for with `sigtimedwait` while sleeping,
/// so no handler or global flag is needed. One that arrives during a flush stops it
/// at its next transport call (see ``Flusher/run(progress:)``): the outcomes in
/// flight are recorded, the rest goes back to the queue, and a message is never
/// left half-sent by it. A closed standard output stops it the same way.
public struct Watcher {
    private let poll: MsgDuration

    /// A watcher that looks for new work at least every `poll`.
    public init(poll: MsgDuration = .seconds(1)) { self.poll = poll }

    /// Runs `flusher` until a signal or a closed output. - Throws: store errors.
    public func run(_ flusher: Flusher, clock: () -> Timestamp = { Timestamp.now() }) throws(MsgError) -> Flusher.Summary {
        let signals = StopSignals()
        defer { signals.restore() }
        var total = Flusher.Summary()
        while true {
            total.add(try flusher.run())
            if total.stopped == .closedOutput || total.misconfigured != nil { return total }
            var wait = poll.milliseconds
            if let due = try flusher.nextDue() {
                wait = min(wait, max(0, due.milliseconds - clock().milliseconds))
            }
            if let signal = signals.wait(milliseconds: wait) {
                total.stopped = .signal(signal)
                return total
            }
        }
    }
}
