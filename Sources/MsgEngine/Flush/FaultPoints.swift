#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport
import Synchronization

/// Kills the process with SIGKILL at a named point, for crash tests.
///
/// `MSG_FAULT=POINT:N` kills when the N-th message (counted from 1 in this process)
/// passes POINT: `before-sending` (inside the store transaction that records
/// `sending`, before it commits), `after-sending` (that transaction committed),
/// `after-delivery` (the transport reported the batch delivered), `after-sent`
/// (the outcome committed); and for an inbox's rows (msg-inbox(1)), `after-intake`
/// (their messages committed to the store, the rows not yet removed). Without the
/// variable, every check is a no-op.
public final class FaultPoints: Sendable {
    /// The points, in the order a message passes them.
    public enum Point: String, CaseIterable, Sendable {
        case beforeSending = "before-sending"
        case afterSending = "after-sending"
        case afterDelivery = "after-delivery"
        case afterSent = "after-sent"
        case afterIntake = "after-intake"
    }

    private let armed: (point: Point, n: Int)?
    private let passed = Mutex<[Point: Int]>([:])

    /// Reads `MSG_FAULT`. - Throws: `config` when it is malformed.
    public init(environment: String? = SystemCalls.environment("MSG_FAULT")) throws(MsgError) {
        guard let text = environment else { armed = nil; return }
        let parts = text.split(separator: ":")
        guard parts.count == 2, let point = Point(rawValue: String(parts[0])), let n = Int(parts[1]), n > 0 else {
            throw MsgError(.config, "MSG_FAULT must be POINT:N with POINT one of \(Point.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
        }
        armed = (point, n)
    }

    /// Records that `count` messages passed `point`; dies if the armed one is among
    /// them. Unarmed (every run but a crash test's), a check where it is called.
    @inline(__always)
    public func pass(_ point: Point, count: Int = 1) {
        guard let armed, armed.point == point, count > 0 else { return }
        passArmed(point, count: count, armed: armed.n)
    }

    private func passArmed(_ point: Point, count: Int, armed n: Int) {
        let before = passed.withLock { p in
            defer { p[point, default: 0] += count }
            return p[point, default: 0]
        }
        if before < n && before + count >= n {
            kill(getpid(), SIGKILL)
        }
    }
}
