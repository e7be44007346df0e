#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// A `tcp://HOST:PORT?…` URL (or `tls://`), read for either side.
///
/// Parameters: `token` or `token_file` (both sides: the secret, or a file holding it
/// that only its owner can read, so the secret is in neither argv nor the
/// environment), `window` (records in flight, client, default 128),
/// `connect_timeout` (client, default 3s), `idle` (listener: a connection that
/// sends nothing for this long, with nothing to answer, is closed; default 5m; a
/// sender makes a connection unused for a minute anew, so keep it above that),
/// `hello_timeout` (listener: a connection that has not finished its TLS handshake
/// and sent its first line, with a token its hello, within this is closed;
/// default 5s).
/// The parameters of the stream's security (`tls://`'s certificates) are kept in
/// ``extra`` for it to read.
public struct TCPAddress: Sendable {
    /// `tcp` or `tls`.
    public var scheme: String
    public var host: String
    public var port: Int
    public var token: String?
    var window = 128
    var connectTimeout = MsgDuration.seconds(3)
    var idle = MsgDuration.seconds(300)
    var helloTimeout = MsgDuration.seconds(5)
    /// The parameters named in `extra` at init, as given.
    public var extra: [String: String] = [:]

    /// - Parameters: `extra`, the parameters the security reads (kept in ``extra``).
    /// - Throws: `config` naming what is wrong.
    public init(_ url: PluginURL, listening: Bool, scheme: String = "tcp", extra known: [String] = []) throws(MsgError) {
        self.scheme = scheme
        guard let authority = url.authority, !authority.isEmpty, url.path.isEmpty || url.path == "/" else {
            throw MsgError(.config, "'\(url.text)' is not a \(scheme.uppercased()) address; write \(scheme)://HOST:PORT, e.g. \(scheme)://127.0.0.1:7000")
        }
        let hostPart: Substring, portPart: Substring
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let rest = authority[authority.index(after: close)...]
            guard rest.hasPrefix(":") else { throw MsgError(.config, "'\(url.text)' has no port; write \(scheme)://[::1]:7000") }
            portPart = rest.dropFirst()
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portPart = authority[authority.index(after: colon)...]
        } else {
            throw MsgError(.config, "'\(url.text)' has no port; write \(scheme)://\(authority):PORT")
        }
        guard !hostPart.isEmpty else { throw MsgError(.config, "'\(url.text)' has no host; write \(scheme)://HOST:PORT") }
        guard let port = Int(portPart), (listening ? 0 : 1)...65535 ~= port else {
            throw MsgError(.config, "'\(url.text)': port '\(portPart)' is not a number from \(listening ? 0 : 1) to 65535")
        }
        host = String(hostPart)
        self.port = port
        for (name, value) in url.parameters {
            switch name {
            case "token":
                guard !value.isEmpty else { throw MsgError(.config, "'\(url.text)': token must not be empty") }
                token = value
            case "token_file":
                token = try SystemCalls.readSecretLine(value, what: "token file")
            case "window" where !listening:
                guard let n = Int(value), (1...4096).contains(n) else {
                    throw MsgError(.config, "'\(url.text)': window=\(value) is not a number from 1 to 4096")
                }
                window = n
            case "connect_timeout" where !listening:
                connectTimeout = try MsgDuration(parsing: value)
            case "idle" where listening:
                do throws(MsgError) { idle = try MsgDuration(parsing: value) } catch {
                    throw MsgError(.config, "'\(url.text)': idle=\(value): \(error.message)")
                }
                guard idle.milliseconds >= 100 else { throw MsgError(.config, "'\(url.text)': idle=\(value) is shorter than 100ms") }
            case "hello_timeout" where listening:
                do throws(MsgError) { helloTimeout = try MsgDuration(parsing: value) } catch {
                    throw MsgError(.config, "'\(url.text)': hello_timeout=\(value): \(error.message)")
                }
                guard (100...300_000).contains(helloTimeout.milliseconds) else {
                    throw MsgError(.config, "'\(url.text)': hello_timeout=\(value) is not from 100ms to 5m")
                }
            case _ where known.contains(name):
                guard !value.isEmpty else { throw MsgError(.config, "'\(url.text)': \(name) must not be empty") }
                extra[name] = value
            default:
                let known = (listening ? ["token", "token_file", "idle", "hello_timeout"] : ["token", "token_file", "window", "connect_timeout"]) + known
                throw MsgError(.config, "'\(url.text)': unknown parameter '\(name)'; known: \(known.joined(separator: ", "))")
            }
        }
    }

    /// Whether only this host can reach the address (a loopback address or name).
    public var isLoopback: Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// `tcp://HOST:PORT`, brackets around an IPv6 host, no parameters (never the token).
    public var display: String {
        host.contains(":") ? "\(scheme)://[\(host)]:\(port)" : "\(scheme)://\(host):\(port)"
    }
}
