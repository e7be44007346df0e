#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// Ctrl-C while a command runs inside `msg shell`.
///
/// The shell keeps SIGINT blocked, so Ctrl-C leaves it pending instead of killing
/// the process. A long command asks here at its safe points (between batches) and
/// stops there; outside the shell SIGINT is not blocked, is never pending, and
/// ends the process as usual.
public enum Interruption {
    /// Whether a blocked SIGINT is pending.
    public static var requested: Bool {
        var pending = sigset_t()
        sigpending(&pending)
        return sigismember(&pending, SIGINT) == 1
    }
}
