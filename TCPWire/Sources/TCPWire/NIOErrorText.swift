import MsgKit
import MsgSupport
import NIOCore
import NIOPosix

/// A connection's error in a few words for a one-line message: the `MsgError`'s own
/// message, the first address's reason a connect failed, the system's text for an
/// errno, a connect timeout in milliseconds. Shared by tcp://, tls:// and smtp://.
public enum NIOErrorText {
    /// The error of a connection to `host` (shown as `display`) that failed with
    /// `error`: `remote` (a failed attempt that counts) when no address was found
    /// because the name does not exist (``HostLookup``), else `unreachable`.
    public static func connectFailure(_ error: any Error, host: String, display: String) -> MsgError {
        if let e = error as? NIOConnectionError, e.connectionErrors.isEmpty, HostLookup.check(host) == .noSuchHost {
            return MsgError(.remote, "cannot connect to \(display): no such host \(host) (the name does not exist); counted as a failed attempt")
        }
        if error is SocketAddressError, HostLookup.check(host) == .noSuchHost {
            return MsgError(.remote, "cannot connect to \(display): no such host \(host) (the name does not exist); counted as a failed attempt")
        }
        return MsgError(.unreachable, "cannot connect to \(display): \(describe(error))")
    }

    public static func describe(_ error: any Error) -> String {
        switch error {
        case let e as MsgError: return e.message
        case let e as NIOConnectionError:
            if let first = e.connectionErrors.first { return describe(first.error) }
            return e.dnsAAAAError.map(describe) ?? e.dnsAError.map(describe) ?? "no address found for \(e.host)"
        case let e as IOError: return SystemCalls.describe(e.errnoCode)
        case ChannelError.connectTimeout(let t): return "no answer within \(t.nanoseconds / 1_000_000)ms"
        default: return "\(error)"
        }
    }
}
