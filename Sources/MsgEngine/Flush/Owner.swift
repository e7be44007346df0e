#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// Who holds a lease: this host and process.
public enum Owner {
    /// This machine's host name.
    public static let host: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    /// Whether the lease's owner may still be working: its lease has not ended and,
    /// when it is on this host, its process exists. A process on another host is
    /// trusted until its lease ends.
    public static func isAlive(_ lease: Message.Lease, now: Timestamp) -> Bool {
        guard lease.until > now else { return false }
        guard lease.host == host else { return true }
        return kill(lease.pid, 0) == 0 || errno == EPERM
    }
}
