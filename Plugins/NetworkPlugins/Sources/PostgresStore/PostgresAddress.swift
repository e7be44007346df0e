import MsgKit
import MsgSupport

/// A `postgres://USER@HOST:PORT/DB?…` (or `postgresql://`) URL, read as libpq reads
/// one, without ever taking a password from it: the URL is on command lines that
/// `ps` shows, so the password comes from `PGPASSWORD` or a `.pgpass` file.
///
/// The host may be a Unix-socket directory, percent-encoded in the authority
/// (`postgres://msg@%2Fvar%2Frun%2Fpostgresql/queue`) or given as `host=/dir`;
/// with no host at all, `PGHOST` or `/var/run/postgresql` is used, as libpq does.
///
/// Parameters: `sslmode` (`disable`, `prefer`, `require`, `verify-ca`,
/// `verify-full`; default `prefer` over TCP), `schema` (the PostgreSQL schema holding the queue, default
/// `msg`, so several queues can share a database), `connect_timeout` (default 5s),
/// `sslrootcert` (the CAs verify-ca and verify-full trust, else `PGSSLROOTCERT`,
/// else the system's; `system` names the system's), `host` and `port` as
/// alternatives to the authority.
struct PostgresAddress: Sendable, Equatable {
    enum TLSMode: String, Sendable {
        case disable, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"

        /// Whether the certificate is verified, and so msg makes the connection (``VerifiedChannel``).
        var verifies: Bool { self == .verifyCA || self == .verifyFull }
    }

    /// A host name or address, or a socket directory (starts with `/`).
    var host: String
    var port = 5432
    var user: String
    var database: String
    var schema = "msg"
    var tls = TLSMode.prefer
    /// The CA file of verify-ca and verify-full; nil: the system's roots.
    var rootCertificates: String?
    var connectTimeout = MsgDuration.seconds(5)

    var isUnixSocket: Bool { host.hasPrefix("/") }
    /// The socket file in a socket directory, named as the server names it.
    var socketPath: String { "\(host)/.s.PGSQL.\(port)" }

    /// - Parameter environment: looks up `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `USER`.
    /// - Throws: `config` naming what is wrong.
    init(_ url: PluginURL, environment: (String) -> String? = SystemCalls.environment) throws(MsgError) {
        let example = "postgres://USER@HOST:5432/DATABASE"
        let authority = url.authority ?? ""
        var hostPart = Substring(authority)
        var userPart: Substring?
        if let at = authority.lastIndex(of: "@") {
            userPart = authority[..<at]
            hostPart = authority[authority.index(after: at)...]
        }
        if let u = userPart, u.contains(":") {
            throw MsgError(.config, "'\(Self.redacted(url.text))': the URL must not hold a password, as ps shows it; set PGPASSWORD or use a .pgpass file")
        }
        var portText: Substring?
        if hostPart.hasPrefix("["), let close = hostPart.firstIndex(of: "]") {
            let rest = hostPart[hostPart.index(after: close)...]
            portText = rest.hasPrefix(":") ? rest.dropFirst() : nil
            hostPart = hostPart[hostPart.index(after: hostPart.startIndex)..<close]
        } else if let colon = hostPart.lastIndex(of: ":") {
            portText = hostPart[hostPart.index(after: colon)...]
            hostPart = hostPart[..<colon]
        }
        var host = Self.percentDecoded(hostPart)
        var port = portText.map(String.init) ?? environment("PGPORT")
        var user = userPart.map { Self.percentDecoded($0) } ?? ""
        var database = String(url.path.drop { $0 == "/" })
        var rootCertificates = environment("PGSSLROOTCERT")
        for (name, value) in url.parameters {
            switch name {
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else {
                    throw MsgError(.config, "'\(url.text)': sslmode=\(value) is not one of disable, prefer, require, verify-ca, verify-full")
                }
                tls = mode
            case "schema":
                guard Self.isPlainName(value) else {
                    throw MsgError(.config, "'\(url.text)': schema=\(value) must be letters, digits and _ (at most 63), not starting with a digit")
                }
                schema = value
            case "connect_timeout":
                connectTimeout = try MsgDuration(parsing: value.allSatisfy(\.isNumber) ? value + "s" : value)
            case "sslrootcert":
                guard !value.isEmpty else { throw MsgError(.config, "'\(url.text)': sslrootcert= needs a file, or system") }
                rootCertificates = value
            case "host": host = value
            case "port": port = value
            case "user": user = value
            case "dbname": database = value
            case "password":
                throw MsgError(.config, "'\(Self.redacted(url.text))': the URL must not hold a password, as ps shows it; set PGPASSWORD or use a .pgpass file")
            default:
                throw MsgError(.config, "'\(url.text)': unknown parameter '\(name)'; known: sslmode, sslrootcert, schema, connect_timeout, host, port, user, dbname")
            }
        }
        self.rootCertificates = rootCertificates == "system" ? nil : rootCertificates
        if host.isEmpty { host = environment("PGHOST") ?? "/var/run/postgresql" }
        if user.isEmpty { user = environment("PGUSER") ?? environment("USER") ?? "" }
        guard !user.isEmpty else { throw MsgError(.config, "'\(url.text)' names no user; write \(example)") }
        if database.isEmpty { database = environment("PGDATABASE") ?? user }
        if let port {
            guard let n = Int(port), (1...65535).contains(n) else {
                throw MsgError(.config, "'\(url.text)': port '\(port)' is not a number from 1 to 65535")
            }
            self.port = n
        }
        self.host = host
        self.user = user
        self.database = database
        if isUnixSocket && url.parameter("sslmode") == nil { tls = .disable }
        if isUnixSocket && tls != .disable && tls != .prefer {
            throw MsgError(.config, "'\(url.text)': sslmode=\(tls.rawValue) needs a TCP host; a Unix socket has no TLS")
        }
    }

    /// Where the server is, for messages: `postgres://msg@127.0.0.1:5432/queue`.
    var display: String {
        let where_ = isUnixSocket ? socketPath : (host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)")
        return "postgres://\(user)@\(where_)/\(database)"
    }

    /// Whether `s` can be used unquoted as an SQL identifier.
    static func isPlainName(_ s: String) -> Bool {
        guard let first = s.utf8.first, s.utf8.count <= 63, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return s.utf8.allSatisfy { b in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) || b == UInt8(ascii: "_")
        }
    }

    /// The URL with any password in it (`user:…@`, `password=…`) blanked out.
    static func redacted(_ text: String) -> String {
        var out = text
        if let scheme = out.range(of: "://") {
            let rest = out[scheme.upperBound...]
            let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") {
                out = String(out[...colon]) + "***" + String(out[at...])
            }
        }
        if let q = out.firstIndex(of: "?") {
            let pairs = out[out.index(after: q)...].split(separator: "&", omittingEmptySubsequences: false).map { pair in
                pair.hasPrefix("password=") ? "password=***" : String(pair)
            }
            out = String(out[...q]) + pairs.joined(separator: "&")
        }
        return out
    }

    private static func percentDecoded(_ s: Substring) -> String {
        guard s.contains("%") else { return String(s) }
        var out: [UInt8] = []
        var bytes = Array(s.utf8)[...]
        while let b = bytes.popFirst() {
            if b == UInt8(ascii: "%"), bytes.count >= 2,
               let v = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) {
                out.append(v)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
