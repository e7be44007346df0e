#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// SIGPIPE blocked on this thread while it writes to a pipe or socket whose reader
/// may be gone (a command that does not read its input, a server that closed the
/// connection: libnats writes with OpenSSL's plain `write`), so the write fails
/// with EPIPE instead of ending msg; a SIGPIPE raised meanwhile is taken off the
/// thread before the mask is put back, as libpq does. Threads started while it is
/// blocked keep it blocked.
public struct PipeSignalBlock {
    private var previous = sigset_t()
    private var set = sigset_t()

    public init() {
        sigemptyset(&set)
        sigaddset(&set, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &set, &previous)
    }

    public func end() {
        var set = self.set
        var previous = self.previous
        var pending = sigset_t()
        sigpending(&pending)
        if sigismember(&pending, SIGPIPE) == 1 && sigismember(&previous, SIGPIPE) == 0 {
            var zero = timespec(tv_sec: 0, tv_nsec: 0)
            _ = sigtimedwait(&set, nil, &zero)
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
    }

    /// `body` with SIGPIPE blocked.
    public static func around<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        let block = PipeSignalBlock()
        defer { block.end() }
        return try body()
    }
}
