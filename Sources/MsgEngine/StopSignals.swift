#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// SIGINT and SIGTERM, blocked on this thread (and the threads it starts after) so a
/// long-running command waits for them where it is safe to stop, with no handler.
struct StopSignals {
    private var set = sigset_t()
    private var previous = sigset_t()

    /// Blocks both signals; ``restore()`` puts the previous mask back.
    init() {
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &set, &previous)
    }

    func restore() {
        var previous = self.previous
        pthread_sigmask(SIG_SETMASK, &previous, nil)
    }

    /// Waits for one of them. - Returns: its name.
    func wait() -> String {
        var set = self.set
        var signal: Int32 = 0
        while sigwait(&set, &signal) != 0 {}
        return Self.name(signal)
    }

    /// Waits for one of them for at most `milliseconds`. - Returns: its name, or nil.
    func wait(milliseconds: Int64) -> String? {
        var set = self.set
        var timeout = timespec(tv_sec: Int(milliseconds / 1000), tv_nsec: Int(milliseconds % 1000) * 1_000_000)
        let signal = sigtimedwait(&set, nil, &timeout)
        return signal == SIGINT || signal == SIGTERM ? Self.name(signal) : nil
    }

    private static func name(_ signal: Int32) -> String { signal == SIGINT ? "SIGINT" : "SIGTERM" }
}
