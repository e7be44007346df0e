#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// Where `--metrics` serves: `HOST:PORT`, IPv4 (`:PORT` is 127.0.0.1), read once
/// when the command line is.
public struct MetricsAddress: Sendable, Equatable, CustomStringConvertible {
    /// The IPv4 address, dotted.
    public let host: String
    /// The port; 0 lets the system choose.
    public let port: UInt16

    /// Reads `HOST:PORT`. - Throws: `usage` naming what is wrong.
    public init(parsing text: String) throws(MsgError) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw MsgError(.usage, "expected HOST:PORT, such as 127.0.0.1:9464")
        }
        let host = text[..<colon].isEmpty ? "127.0.0.1" : String(text[..<colon])
        var probe = in_addr()
        guard inet_pton(AF_INET, host, &probe) == 1 else {
            throw MsgError(.usage, "\(host) is not an IPv4 address")
        }
        self.host = host
        self.port = port
    }

    public var description: String { "\(host):\(port)" }
}
