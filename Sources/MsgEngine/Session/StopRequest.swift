#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import Synchronization

/// Whether a long command was asked to stop, and why: SIGINT or SIGTERM pending
/// (they are kept blocked while it runs, see ``StopSignals``; `msg shell` keeps
/// SIGINT blocked, so Ctrl-C there is a pending SIGINT), or standard output closed
/// under it (`msg flush | head -1`). Outside those, the signals are not blocked,
/// never pending, and end the process as usual. The command stops at its next safe
/// point: it hands out no new work, records the outcomes of what is in flight and
/// puts the rest back as it was.
public final class StopRequest: Sendable {
    /// Why the command stops.
    public enum Reason: Sendable, Equatable {
        /// A signal was received (its number).
        case signal(Int32)
        /// Standard output was closed: nobody reads the records any more.
        case closedOutput

        /// The exit status of a command stopped for this reason, as the shell
        /// reports a process killed by the signal: 128 + its number.
        public var exitStatus: Int32 {
            switch self {
            case .signal(let n): return 128 + n
            case .closedOutput: return 128 + SIGPIPE
            }
        }

        /// `SIGINT`, `SIGTERM`, or what closed output is.
        public var name: String {
            switch self {
            case .signal(SIGINT): return "SIGINT"
            case .signal(SIGTERM): return "SIGTERM"
            case .signal(let n): return "signal \(n)"
            case .closedOutput: return "standard output closed"
            }
        }
    }

    private let closed = Atomic<Bool>(false)
    private let watchesSignals: Bool

    /// A request that looks at pending SIGINT and SIGTERM (`watchesSignals`) and
    /// at ``outputClosed()``.
    public init(watchesSignals: Bool = true) {
        self.watchesSignals = watchesSignals
    }

    /// Why to stop, or nil to go on. Cheap: one `sigpending` call.
    public var reason: Reason? {
        if closed.load(ordering: .acquiring) { return .closedOutput }
        guard watchesSignals else { return nil }
        var pending = sigset_t()
        sigpending(&pending)
        if sigismember(&pending, SIGTERM) == 1 { return .signal(SIGTERM) }
        if sigismember(&pending, SIGINT) == 1 { return .signal(SIGINT) }
        return nil
    }

    /// Whether standard output was closed (no system call: for every record written).
    public var outputIsClosed: Bool { closed.load(ordering: .acquiring) }

    /// Says that standard output was closed.
    public func outputClosed() { closed.store(true, ordering: .releasing) }
}
