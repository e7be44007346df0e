#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// What a `nats://HOST:PORT/SUBJECT?…` URL says (msg-nats(7)): the server, the
/// subject (a template), and how to publish and authenticate. Every parameter is
/// msg's; one it does not know is refused before anything is sent.
struct NATSSettings: Sendable {
    /// `nats://HOST:PORT` (or `tls://HOST:PORT`), without the subject or query.
    var server: String
    /// The host as written, the name a server's certificate must have by default.
    var host: String
    var subject: SubjectTemplate
    /// Send the body alone instead of the record.
    var inputBody = false
    /// Publishes awaiting their acknowledgement at once.
    var concurrency = 1
    /// How long to wait for the connection (and TLS), at most the attempt's deadline.
    var connectTimeout: Int64 = 5_000
    /// The stream each publish must land in (`Nats-Expected-Stream`), if named.
    var expectStream: String?
    var secure = false
    var caFile: String?
    var certificateFile: String?
    var keyFile: String?
    var serverName: String?
    var token: String?
    var user: String?
    var password: String?
    var credsFile: String?
    var nkey: String?
    var nkeySeedFile: String?

    static let names = ["input", "concurrency", "connect_timeout", "stream", "tls", "ca", "cert", "key", "server_name",
                        "token_file", "user", "password_file", "creds", "nkey", "nkey_seed"]

    /// - Throws: `config` for a parameter that does not read, a secret file others
    ///   may read, or a subject that is not one.
    init(_ url: PluginURL) throws(MsgError) {
        guard let authority = url.authority, !authority.isEmpty else {
            throw MsgError(.config, "nats: needs a server and a subject, e.g. nats://127.0.0.1:4222/orders.new, got '\(url.text)'")
        }
        guard !authority.contains("@") else {
            throw MsgError(.config, "nats: a user or password in the URL would be in argv and in logs; use user= and password_file=FILE")
        }
        host = authority
        if authority.hasPrefix("[") {
            if let close = authority.firstIndex(of: "]") { host = String(authority[authority.index(after: authority.startIndex)..<close]) }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
        }
        server = "nats://" + authority
        subject = try SubjectTemplate(String(url.path.drop { $0 == "/" }))
        for (name, value) in url.parameters {
            switch name {
            case "input":
                guard value == "record" || value == "body" else { throw MsgError(.config, "nats: parameter input must be record or body, got '\(value)'") }
                inputBody = value == "body"
            case "concurrency":
                guard let n = Int(value), (1...4096).contains(n) else {
                    throw MsgError(.config, "nats: parameter concurrency must be a number from 1 to 4096, got '\(value)'")
                }
                concurrency = n
            case "connect_timeout":
                do throws(MsgError) {
                    connectTimeout = try MsgDuration(parsing: value).milliseconds
                } catch {
                    throw MsgError(.config, "nats: parameter connect_timeout: \(error.message)")
                }
                guard connectTimeout > 0 else { throw MsgError(.config, "nats: parameter connect_timeout must be more than 0") }
            case "stream":
                guard !value.isEmpty, value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: ".") && $0 != UInt8(ascii: "*") && $0 != UInt8(ascii: ">") }) else {
                    throw MsgError(.config, "nats: parameter stream must be a stream's name (no space, '.', '*' or '>'), got '\(value)'")
                }
                expectStream = value
            case "tls":
                guard let yes = ["yes": true, "no": false][value] else { throw MsgError(.config, "nats: parameter tls must be yes or no, got '\(value)'") }
                secure = yes
            case "ca": caFile = try Self.readable(value, what: name)
            case "cert": certificateFile = try Self.readable(value, what: name)
            case "key": keyFile = try Self.readable(value, what: name)
            case "server_name":
                guard !value.isEmpty, !value.contains(where: { $0.isWhitespace }) else { throw MsgError(.config, "nats: parameter server_name is empty or has a space") }
                serverName = value
            case "token_file": token = try SystemCalls.readSecretLine(value, what: "nats: \(name)")
            case "user":
                guard !value.isEmpty else { throw MsgError(.config, "nats: parameter user is empty") }
                user = value
            case "password_file": password = try SystemCalls.readSecretLine(value, what: "nats: \(name)")
            case "creds":
                _ = try SystemCalls.readPrivateFile(value, what: "nats: creds")
                credsFile = value
            case "nkey":
                guard value.hasPrefix("U"), value.count == 56, value.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) else {
                    throw MsgError(.config, "nats: parameter nkey must be a user's public NKey (56 characters from U), got '\(value)'")
                }
                nkey = value
            case "nkey_seed":
                _ = try SystemCalls.readPrivateFile(value, what: "nats: nkey_seed")
                nkeySeedFile = value
            default:
                throw Self.refusal(of: name)
            }
        }
        if caFile != nil || certificateFile != nil || serverName != nil { secure = true }
        if (certificateFile == nil) != (keyFile == nil) {
            throw MsgError(.config, "nats: a client certificate needs both cert and key")
        }
        if (user == nil) != (password == nil) {
            throw MsgError(.config, "nats: user= needs password_file= and password_file= needs user=")
        }
        if (nkey == nil) != (nkeySeedFile == nil) {
            throw MsgError(.config, "nats: nkey= (the public key) needs nkey_seed= (the file of its seed), and the other way round")
        }
        let ways = [token != nil, user != nil, credsFile != nil, nkey != nil].filter { $0 }.count
        guard ways <= 1 else {
            throw MsgError(.config, "nats: name one way to authenticate: token_file, user and password_file, creds, or nkey and nkey_seed")
        }
    }

    /// The error for a parameter msg does not know, naming the one it is nearly.
    static func refusal(of name: String) -> MsgError {
        if let near = ParameterSpelling.nearest(name, in: names) {
            return MsgError(.config, "nats: unknown parameter '\(name)' (did you mean \(near)=?); nothing was sent")
        }
        return MsgError(.config, "nats: unknown parameter '\(name)'; it takes \(names.joined(separator: ", ")); nothing was sent")
    }

    private static func readable(_ path: String, what: String) throws(MsgError) -> String {
        guard access(path, R_OK) == 0 else { throw SystemCalls.error(.config, "nats: cannot read \(what) \(path)") }
        return path
    }
}
