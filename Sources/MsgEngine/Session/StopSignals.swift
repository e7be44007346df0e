#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// SIGINT and SIGTERM, blocked on this thread (and the threads it starts after) so a
/// long-running command waits for them, or asks for them (``StopRequest``), where it
/// is safe to stop, with no handler. Block them before opening a transport, whose
/// threads must inherit the mask.
///
/// ``restore()`` unblocks what was not blocked before: a signal still pending then
/// is delivered, and ends the process as it would have at once, after the command
/// put everything back in order.
public struct StopSignals {
    private var set = sigset_t()
    private var previous = sigset_t()

    /// Blocks both signals, and SIGHUP with `hangup` (which ``wait()`` then returns
    /// too, for a service that reads its files again); ``restore()`` puts the
    /// previous mask back.
    public init(hangup: Bool = false) {
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        if hangup { sigaddset(&set, SIGHUP) }
        pthread_sigmask(SIG_BLOCK, &set, &previous)
    }

    /// Puts the previous mask back.
    public func restore() {
        var previous = self.previous
        pthread_sigmask(SIG_SETMASK, &previous, nil)
    }

    /// Waits for one of them. - Returns: its number.
    public func wait() -> Int32 {
        var set = self.set
        var signal: Int32 = 0
        while sigwait(&set, &signal) != 0 {}
        return signal
    }

    /// Waits for one of them for at most `milliseconds`. - Returns: its number, or nil.
    func wait(milliseconds: Int64) -> Int32? {
        var set = self.set
        var timeout = timespec(tv_sec: Int(milliseconds / 1000), tv_nsec: Int(milliseconds % 1000) * 1_000_000)
        let signal = sigtimedwait(&set, nil, &timeout)
        return signal == SIGINT || signal == SIGTERM ? signal : nil
    }
}
