#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgEngine

/// What `flush` and `retry` hold while they run: SIGINT and SIGTERM blocked (asked
/// for between transport calls) and SIGPIPE ignored (a closed standard output
/// becomes EPIPE, a stop request like a signal), so that nothing is left `sending`.
final class Stopping {
    let request = StopRequest()
    private let signals = StopSignals()
    private let pipe = signal(SIGPIPE, SIG_IGN)

    /// Puts both back. A signal still pending is delivered now, and ends the
    /// process as it would have at once.
    func end() {
        signal(SIGPIPE, pipe)
        signals.restore()
    }
}
