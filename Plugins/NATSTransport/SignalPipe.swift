#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// libnats writes to its socket with OpenSSL's plain `write`, so a server that
/// closed the connection would kill msg with SIGPIPE. As libpq does, SIGPIPE is
/// blocked on the calling thread while libnats runs (the threads libnats starts
/// then inherit the block for their life), and a SIGPIPE it raised here is taken
/// before the block is lifted: msg sees the error, never the signal.
enum SignalPipe {
    static func blocked<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        var pipe = sigset_t()
        sigemptyset(&pipe)
        sigaddset(&pipe, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipe, &previous)
        var pending = sigset_t()
        sigpending(&pending)
        let wasPending = sigismember(&pending, SIGPIPE) == 1
        defer {
            if !wasPending {
                sigpending(&pending)
                if sigismember(&pending, SIGPIPE) == 1 {
                    var none = timespec(tv_sec: 0, tv_nsec: 0)
                    _ = sigtimedwait(&pipe, nil, &none)
                }
            }
            pthread_sigmask(SIG_SETMASK, &previous, nil)
        }
        return try body()
    }
}
