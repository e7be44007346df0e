#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport
import Synchronization

/// A count shown on standard error while a long operation runs, when it is a terminal.
public final class Progress: Sendable {
    private struct State {
        var lastShown: Int64 = 0
        var shown = false
        var total: Int?
    }

    private let label: String
    private let fd: Int32
    private let enabled: Bool
    private let state: Mutex<State>

    /// How many there are in all, when known: shown as "N of TOTAL".
    public var total: Int? {
        get { state.withLock { $0.total } }
        set { state.withLock { $0.total = newValue } }
    }

    /// A progress line "msg: <label> N" on `fd`, shown at most five times a second
    /// when `enabled` (``Console/progress(_:total:shown:)`` decides). Any thread may
    /// update it.
    public init(_ label: String, total: Int? = nil, fd: Int32, enabled: Bool) {
        self.label = label
        self.fd = fd
        self.enabled = enabled
        state = Mutex(State(total: total))
    }

    /// Whether it shows anything (standard error is a terminal).
    public var isShown: Bool { enabled }

    /// Shows `count` if enough time has passed.
    public func update(_ count: Int) {
        guard enabled else { return }
        let now = Monotonic.milliseconds()
        let total: Int?? = state.withLock { s in
            guard now - s.lastShown >= 200 else { return nil }
            s.lastShown = now
            s.shown = true
            return .some(s.total)
        }
        guard let total else { return }
        let text = Array("\rmsg: \(label) \(count)\(total.map { " of \($0)" } ?? "")".utf8)
        _ = try? SystemCalls.writeAll(fd, text, code: .storeIO, what: "standard error")
    }

    /// Clears the progress line.
    public func finish() {
        guard state.withLock({ $0.shown }) else { return }
        _ = try? SystemCalls.writeAll(fd, Array("\r\u{1B}[K".utf8), code: .storeIO, what: "standard error")
    }
}
