import MsgKit
import MsgSupport

/// What an `http://` or `https://` URL says: the endpoint, and msg's parameters,
/// which are its query. The server's own query is written with `query.` before
/// each name (`https://fn.example.net/api/hook?query.code=K&concurrency=8` posts
/// to `…/hook?code=K`); any other name is refused, so a misspelt parameter never
/// goes to the server in silence (nor the secret file it names).
struct HTTPSettings: Sendable {
    /// The URL requests go to.
    var endpoint: String
    /// The host, for messages.
    var host: String
    /// Send the body alone instead of the record.
    var inputBody = false
    /// The Content-Type of a body sent alone, unless the message has a `Content-Type` header.
    var bodyContentType = "text/plain; charset=utf-8"
    var concurrency = 1
    var followRedirects = false
    var signer: WebhookSigner?
    /// Headers sent with every request (`headers_file`).
    var extraHeaders: [(String, String)] = []
    var caFile: String?
    var certificateFile: String?
    var keyFile: String?
    /// The lookup URL, with `{id}` where the id goes.
    var lookupTemplate: String?

    static let names = ["input", "content_type", "concurrency", "follow_redirects", "signing_secret_file",
                        "signing_secret_env", "headers_file", "ca_file", "cert_file", "key_file", "lookup"]

    /// - Throws: `config` for a parameter that does not read, or a secret file that
    ///   others may read.
    init(_ url: PluginURL) throws(MsgError) {
        var text = url.text
        if let hash = text.firstIndex(of: "#") { text = String(text[..<hash]) }
        var kept: [Substring] = []
        var base = Substring(text)
        if let q = text.firstIndex(of: "?") {
            base = text[..<q]
            for pair in text[text.index(after: q)...].split(separator: "&") {
                let name = String(pair.prefix { $0 != "=" })
                if Self.names.contains(name) { continue }
                guard name.hasPrefix(Self.serverPrefix), name.count > Self.serverPrefix.count else { throw Self.refusal(of: name) }
                kept.append(pair.dropFirst(Self.serverPrefix.count))
            }
        }
        endpoint = String(base) + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&"))
        guard let authority = url.authority, !authority.isEmpty else {
            throw MsgError(.config, "\(url.scheme): needs a host, e.g. \(url.scheme)://api.example.com/hook, got '\(url.text)'")
        }
        guard !authority.contains("@") else {
            throw MsgError(.config, "\(url.scheme): a user or password in the URL would be in argv and in logs; put an Authorization header in headers_file=FILE instead")
        }
        host = authority
        // The names were checked above, the server's own kept in the endpoint.
        let p = try URLParameters(url, "http:", names: Self.names, also: { _ in true })
        inputBody = try p.choice("input", ["record": false, "body": true]) ?? false
        bodyContentType = try p.text("content_type", mustBe: "a media type, with no control character (a line break?)") {
            !$0.isEmpty && !Self.hasControlBytes($0)
        } ?? bodyContentType
        concurrency = try p.int("concurrency", in: 1...256) ?? 1
        followRedirects = try p.choice("follow_redirects", ["yes": true, "no": false, "true": true, "false": false, "1": true, "0": false]) ?? false
        if p.text("signing_secret_file") != nil && p.text("signing_secret_env") != nil {
            throw MsgError(.config, "http: name one of signing_secret_file and signing_secret_env")
        }
        if let file = p.text("signing_secret_file") {
            signer = try WebhookSigner(secret: Self.readPrivate(file, what: "signing_secret_file"), from: file)
        }
        if let name = p.text("signing_secret_env") {
            guard let secret = SystemCalls.environment(name) else {
                throw MsgError(.config, "http: signing_secret_env=\(name) names a variable that is not set")
            }
            signer = try WebhookSigner(secret: secret, from: "$\(name)")
        }
        if let file = p.text("headers_file") { extraHeaders = try Self.headers(Self.readPrivate(file, what: "headers_file"), file: file) }
        caFile = try p.readable("ca_file")
        certificateFile = try p.readable("cert_file")
        keyFile = try p.readable("key_file")
        lookupTemplate = try p.text("lookup", mustBe: "an http(s) URL with {id} where the id goes") {
            $0.contains("{id}") && ($0.hasPrefix("http://") || $0.hasPrefix("https://"))
        }
        if (certificateFile == nil) != (keyFile == nil) {
            throw MsgError(.config, "http: a client certificate needs both cert_file and key_file")
        }
    }

    /// How a parameter of the server's own query is written: `query.NAME=VALUE`.
    static let serverPrefix = "query."

    /// The error for a parameter that is neither msg's nor the server's: the one
    /// of msg's it is nearly (a misspelling such as `signing_secret_flie` would
    /// send the webhook unsigned, and the secret file's path to the server), else
    /// msg's names and how the server's own are written.
    static func refusal(of name: String) -> MsgError {
        if let near = ParameterSpelling.nearest(name, in: names) {
            return MsgError(.config, "http: unknown parameter '\(name)' (did you mean \(near)=?); nothing was sent")
        }
        return MsgError(.config, "http: unknown parameter '\(name)'; msg's are \(names.joined(separator: ", ")), and one of the server's own query is written \(serverPrefix)\(name)=VALUE; nothing was sent")
    }

    /// The text of a file only its owner may read (a secret): else `config`.
    static func readPrivate(_ path: String, what: String) throws(MsgError) -> String {
        String(decoding: try SystemCalls.readPrivateFile(path, what: "http: \(what)"), as: UTF8.self)
    }

    /// Whether `value` has a byte no header value may hold: a control character
    /// (CR, LF, NUL…) or DEL. Checked as bytes: Swift reads "\r\n" as one Character,
    /// equal to neither "\r" nor "\n".
    static func hasControlBytes(_ value: String) -> Bool {
        value.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }

    /// `Name: Value` lines (LF or CRLF); blank lines and `#` comments are skipped.
    static func headers(_ text: String, file: String) throws(MsgError) -> [(String, String)] {
        var result: [(String, String)] = []
        for (n, raw) in text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            let bytes = raw.last == 0x0D ? raw.dropLast() : raw[...]
            let line = String(decoding: bytes, as: UTF8.self)
            if line.utf8.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) || line.hasPrefix("#") { continue }
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                  line[..<colon].unicodeScalars.allSatisfy({ $0.isASCII && (Character($0).isLetter || Character($0).isNumber || "-_".unicodeScalars.contains($0)) }) else {
                throw MsgError(.config, "http: \(file) line \(n + 1) is not a header (Name: Value)")
            }
            let value = String(line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" })
            guard !hasControlBytes(value) else {
                throw MsgError(.config, "http: \(file) line \(n + 1): the value has a control character")
            }
            result.append((String(line[..<colon]), value))
        }
        return result
    }
}
