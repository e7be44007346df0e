#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// An `smtp://HOST:PORT?…` or `smtps://HOST:PORT?…` URL (msg-smtp(7)).
///
/// `smtp://` requires STARTTLS unless `tls=none` says to send in clear text;
/// `smtps://` is TLS from the first byte. Certificates are verified as tls:// and
/// https:// verify them (`ca=`, `server_name=`). AUTH (`user=`, `password_file=`)
/// is refused on a connection without TLS.
struct SMTPSettings: Sendable {
    enum Security: Sendable { case none, startTLS, implicit }

    var host: String
    var port: Int
    var security: Security
    var ca: String?
    var serverName: String?
    var user: String?
    var password: String?
    var helo: String
    var from: String?
    var concurrency = 1
    var connectTimeout = MsgDuration.seconds(10)
    /// `smtp://HOST:PORT`, no parameters.
    var display: String

    static let known = ["tls", "ca", "server_name", "user", "password_file", "helo", "from", "concurrency", "connect_timeout"]

    /// - Throws: `config` naming what is wrong.
    init(_ url: PluginURL) throws(MsgError) {
        let scheme = url.scheme
        guard let authority = url.authority, !authority.isEmpty, url.path.isEmpty || url.path == "/" else {
            throw MsgError(.config, "'\(url.text)' is not an SMTP server; write \(scheme)://HOST:PORT, e.g. \(scheme)://127.0.0.1:\(scheme == "smtps" ? 465 : 587)")
        }
        var hostPart = Substring(authority), portPart: Substring? = nil
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let rest = authority[authority.index(after: close)...]
            if rest.hasPrefix(":") { portPart = rest.dropFirst() }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portPart = authority[authority.index(after: colon)...]
        }
        guard !hostPart.isEmpty else { throw MsgError(.config, "'\(url.text)' has no host; write \(scheme)://HOST:PORT") }
        host = String(hostPart)
        if let portPart {
            guard let p = Int(portPart), (1...65535).contains(p) else {
                throw MsgError(.config, "'\(url.text)': port '\(portPart)' is not a number from 1 to 65535")
            }
            port = p
        } else {
            port = scheme == "smtps" ? 465 : 25
        }
        security = scheme == "smtps" ? .implicit : .startTLS
        display = host.contains(":") ? "\(scheme)://[\(host)]:\(port)" : "\(scheme)://\(host):\(port)"
        var name = [UInt8](repeating: 0, count: 256)
        helo = gethostname(&name, name.count) == 0 ? String(decoding: name.prefix { $0 != 0 }, as: UTF8.self) : ""
        if helo.isEmpty { helo = "localhost" }
        let p = try URLParameters(url, "\(scheme):", names: Self.known)
        if let tls = p.text("tls") {
            switch (tls, scheme) {
            case ("none", "smtp"): security = .none
            case ("starttls", "smtp"): security = .startTLS
            default:
                throw MsgError(.config, "'\(url.text)': tls=\(tls) is not known here; smtp:// takes tls=starttls (the default) or tls=none, smtps:// is TLS throughout")
            }
        }
        ca = p.text("ca")
        serverName = p.text("server_name")
        user = p.text("user")
        let passwordFile = p.text("password_file")
        helo = try p.text("helo", mustBe: "a host name") { !$0.isEmpty && $0.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F } } ?? helo
        if let address = p.text("from") { from = try Self.envelope(address, what: "from=") }
        concurrency = try p.int("concurrency", in: 1...64) ?? 1
        connectTimeout = try p.duration("connect_timeout") ?? connectTimeout
        if let passwordFile {
            let bytes = try SystemCalls.readPrivateFile(passwordFile, what: "smtp: password_file")
            password = String(decoding: bytes.prefix { $0 != 0x0A && $0 != 0x0D }, as: UTF8.self)
        }
        if (user == nil) != (password == nil) {
            throw MsgError(.config, "'\(url.text)': AUTH needs both user= and password_file=")
        }
        if user != nil && security == .none {
            throw MsgError(.config, "'\(url.text)': msg never sends a password without TLS; drop tls=none (STARTTLS) or use smtps://")
        }
    }

    /// The address of an envelope: the part in angle brackets when there is one
    /// (`Ann <ann@example.com>`), which must hold no space, control character or
    /// bracket.
    /// - Throws: `rejected` (for a record's address) naming what is wrong.
    static func envelope(_ text: String, what: String, code: MsgError.Code = .config) throws(MsgError) -> String {
        var address = Substring(text)
        if let open = text.lastIndex(of: "<"), let close = text.lastIndex(of: ">"), open < close {
            address = text[text.index(after: open)..<close]
        }
        address = address.drop { $0 == " " }
        while address.last == " " { address.removeLast() }
        guard !address.isEmpty, address.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F && $0 != "<" && $0 != ">" }) else {
            throw MsgError(code, "\(what) \(MailText.printable(text)) is not a mail address msg can put in an SMTP envelope")
        }
        return String(address)
    }
}
