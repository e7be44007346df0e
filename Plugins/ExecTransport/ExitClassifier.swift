#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// How a command's end becomes a delivery outcome: its exit status read as
/// sysexits(3), as Postfix's pipe(8) reads it (docs/DESIGN.md 6, msg-exec(7)).
///
/// | end                              | outcome                              |
/// |----------------------------------|--------------------------------------|
/// | exit 0                           | delivered (`sent`)                   |
/// | 75 TEMPFAIL, 71 OSERR, 74 IOERR  | `remote`: retried, attempt counted   |
/// | 69 UNAVAILABLE, 68 NOHOST        | `unreachable`: retried, not counted  |
/// | 78 CONFIG, 126, 127              | `config`: the run stops (exit 78)    |
/// | past the deadline                | `timeout`                            |
/// | killed by a signal msg did not send | `remote`                          |
/// | any other status                 | `rejected`: the message is dead      |
///
/// 126 and 127 are what a shell exits with when it cannot find or run a command:
/// a typo in the configuration, which must not kill every message it meets.
enum ExitClassifier {
    static func outcome(_ end: ChildEnd, command: String, deadline: MsgDuration) -> DeliveryOutcome {
        switch end.how {
        case .exited(0):
            return .delivered(confirmed: false)
        case .exited(let status):
            let code: MsgError.Code
            switch status {
            case 75, 71, 74: code = .remote
            case 69, 68: code = .unreachable
            case 78, 126, 127: code = .config
            default: code = .rejected
            }
            let text = end.firstErrorLine ?? "\(command) exited with status \(status)\(name(of: status).map { " (\($0))" } ?? "")"
            return .failed(MsgError(code, text), retryAfter: nil)
        case .signalled(let signal):
            let text = end.firstErrorLine ?? "\(command) was killed by signal \(signal)"
            return .failed(MsgError(.remote, text), retryAfter: nil)
        case .timedOut:
            let said = end.firstErrorLine.map { "; it said: \($0)" } ?? ""
            return .failed(MsgError(.timeout, "\(command) did not finish within \(deadline); its process group was killed\(said)"), retryAfter: nil)
        case .notStarted(let errno):
            return .failed(notStarted(command, errno: errno), retryAfter: nil)
        }
    }

    /// The error for a command that could not be started: `config` when it does not
    /// exist or may not be run (the run stops); `rejected` when the message's values
    /// are too large for the environment (E2BIG: that message will never fit, so it
    /// is dead rather than retried forever); else `remote` (out of processes).
    static func notStarted(_ command: String, errno value: Int32) -> MsgError {
        if value == E2BIG {
            return MsgError(.rejected, "cannot run \(command) for this message: its values are too large for the environment (E2BIG); input=record passes the whole record on standard input")
        }
        let code: MsgError.Code = [ENOENT, EACCES, ENOEXEC, ENOTDIR, ELOOP, ENAMETOOLONG].contains(value) ? .config : .remote
        return SystemCalls.error(code, "cannot run \(command)", errno: value)
    }

    private static func name(of status: Int32) -> String? {
        switch status {
        case 64: "EX_USAGE"
        case 65: "EX_DATAERR"
        case 66: "EX_NOINPUT"
        case 67: "EX_NOUSER"
        case 68: "EX_NOHOST"
        case 69: "EX_UNAVAILABLE"
        case 70: "EX_SOFTWARE"
        case 71: "EX_OSERR"
        case 73: "EX_CANTCREAT"
        case 74: "EX_IOERR"
        case 75: "EX_TEMPFAIL"
        case 76: "EX_PROTOCOL"
        case 77: "EX_NOPERM"
        case 78: "EX_CONFIG"
        case 126: "cannot execute"
        case 127: "command not found"
        default: nil
        }
    }
}
