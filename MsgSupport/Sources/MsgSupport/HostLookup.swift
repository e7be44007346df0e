#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// Whether a host name exists, asked of the system's resolver (getaddrinfo), for
/// a connection that found no address: a name that does not exist (NXDOMAIN, or no
/// address of any kind) is a failed attempt that counts, as a wrong address is; a
/// resolver that cannot answer now (SERVFAIL, a timeout) is the network's trouble,
/// retried without counting (docs/DESIGN.md 6). Shared by tcp://, tls://, smtp://
/// and http(s)://, whose libraries keep the resolver's code to themselves.
public enum HostLookup {
    public enum Answer: Sendable, Equatable {
        /// It resolves (now).
        case found
        /// The name does not exist, or has no address (EAI_NONAME, EAI_NODATA).
        case noSuchHost
        /// The resolver could not answer (EAI_AGAIN, EAI_FAIL, …), with its words.
        case notNow(String)
    }

    /// Asks the resolver about `host` (an address literal is found at once).
    public static func check(_ host: String) -> Answer {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &result)
        if let result { freeaddrinfo(result) }
        switch rc {
        case 0: return .found
        case EAI_NONAME, -5 /* EAI_NODATA, a GNU extension Glibc's module does not show */: return .noSuchHost
        default: return .notNow(String(cString: gai_strerror(rc)))
        }
    }

    /// The host name of a URL's authority (`user@host:port`, `[::1]:80`).
    public static func hostName(ofAuthority authority: String) -> String {
        let hostPort = authority.split(separator: "@").last.map(String.init) ?? authority
        if hostPort.hasPrefix("[") { return String(hostPort.dropFirst().prefix { $0 != "]" }) }
        return String(hostPort.prefix { $0 != ":" })
    }

    /// The error of a connection to `host` that found no address: `remote` (counted)
    /// when the name does not exist, else `unreachable` with `otherwise`.
    public static func failure(_ host: String, what: String, otherwise: String) -> (noSuchHost: Bool, message: String) {
        switch check(host) {
        case .noSuchHost: return (true, "\(what): no such host \(host) (the name does not exist); counted as a failed attempt")
        case .found, .notNow: return (false, otherwise)
        }
    }
}
