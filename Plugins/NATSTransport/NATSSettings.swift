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
        let p = try URLParameters(url, "nats:", names: Self.names)
        inputBody = try p.choice("input", ["record": false, "body": true]) ?? false
        concurrency = try p.int("concurrency", in: 1...4096) ?? concurrency
        if let timeout = try p.duration("connect_timeout") {
            guard timeout.milliseconds > 0 else { throw p.error("connect_timeout", mustBe: "more than 0") }
            connectTimeout = timeout.milliseconds
        }
        expectStream = try p.text("stream", mustBe: "a stream's name (no space, '.', '*' or '>')") { value in
            !value.isEmpty && value.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: ".") && $0 != UInt8(ascii: "*") && $0 != UInt8(ascii: ">") }
        }
        secure = try p.yes("tls") ?? false
        caFile = try p.readable("ca")
        certificateFile = try p.readable("cert")
        keyFile = try p.readable("key")
        serverName = try p.text("server_name", mustBe: "a host name") { !$0.isEmpty && !$0.contains(where: { $0.isWhitespace }) }
        if let file = p.text("token_file") { token = try SystemCalls.readSecretLine(file, what: "nats: token_file") }
        user = try p.text("user", mustBe: "a user's name") { !$0.isEmpty }
        if let file = p.text("password_file") { password = try SystemCalls.readSecretLine(file, what: "nats: password_file") }
        if let file = p.text("creds") {
            _ = try SystemCalls.readPrivateFile(file, what: "nats: creds")
            credsFile = file
        }
        nkey = try p.text("nkey", mustBe: "a user's public NKey (56 characters from U)") { value in
            value.hasPrefix("U") && value.count == 56 && value.allSatisfy { $0.isASCII && ($0.isUppercase || $0.isNumber) }
        }
        if let file = p.text("nkey_seed") {
            _ = try SystemCalls.readPrivateFile(file, what: "nats: nkey_seed")
            nkeySeedFile = file
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
}
