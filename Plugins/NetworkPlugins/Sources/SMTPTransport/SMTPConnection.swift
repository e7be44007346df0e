import MsgKit
import MsgSupport
import NIOCore
import NIOPosix
import NIOSSL
import TCPWire
import TLSCommon

/// One SMTP session, used from a thread that is not its event loop: connects,
/// reads the greeting, says EHLO, starts TLS (STARTTLS, or from the first byte
/// for smtps://), says EHLO again and authenticates; then sends mails, each with
/// MAIL, RCPT and DATA in one write where the server offers PIPELINING.
final class SMTPConnection {
    private let settings: SMTPSettings
    private let channel: any Channel
    private let handler: NIOLoopBound<SMTPClientHandler>
    private let tls: (context: NIOSSLContext, configuration: TLSConfiguration, name: String?)?
    /// What the server offers (EHLO's lines, upper-cased keywords).
    private(set) var extensions: Set<String> = []
    /// Whether the server may have taken a mail this session could not confirm: set
    /// while a mail's final dot is out and its reply not in.
    private(set) var usable = true
    private let group: any EventLoopGroup
    /// Fetching the server's certificate without verifying it, only to say why it
    /// did not verify: stops after TLS and EHLO, sends no mail.
    private let probing: Bool
    /// When the attempt under way must be over (`--deadline` bounds a whole
    /// attempt: connect, TLS, every SMTP step), if one is under way; every wait
    /// takes no longer than what is left of it.
    private var attemptEnd: NIODeadline?

    /// - Throws: `config` for what retrying cannot mend (TLS that does not verify, no
    ///   STARTTLS offered, AUTH refused); `unreachable` or `timeout` otherwise.
    init(_ settings: SMTPSettings, group: any EventLoopGroup, probing: Bool = false, until: NIODeadline? = nil) throws(MsgError) {
        self.settings = settings
        self.group = group
        self.probing = probing
        self.attemptEnd = until
        if settings.security != .none {
            var configuration = try TLSSetup.client(TLSSetup.Files(ca: settings.ca.map { ("ca", $0) }), display: settings.display)
            // Only to say why a certificate did not verify: nothing is sent over it.
            if probing { configuration.certificateVerification = .none }
            let context = try TLSSetup.context(configuration, display: settings.display)
            tls = (context, configuration, settings.serverName ?? (TLSReason.isAddress(settings.host) ? nil : settings.host))
        } else {
            tls = nil
        }
        let loop = group.next()
        let handler: NIOLoopBound<SMTPClientHandler>
        do { handler = try loop.submit { NIOLoopBound(SMTPClientHandler(), eventLoop: loop) }.wait() } catch {
            throw MsgError(.unreachable, "cannot connect to \(settings.display): \(error)")
        }
        self.handler = handler
        let implicit = settings.security == .implicit ? tls : nil
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(.milliseconds(Self.bounded(settings.connectTimeout, by: until).milliseconds))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let implicit { try channel.pipeline.syncOperations.addHandlers(try Self.tlsHandlers(implicit, probing: probing)) }
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(SMTPReplyDecoder()))
                    try channel.pipeline.syncOperations.addHandler(handler.value)
                }
            }
        do {
            channel = try bootstrap.connect(host: settings.host, port: settings.port).wait()
        } catch {
            throw Self.explained(error, settings, tls, group) ?? NIOErrorText.connectFailure(error, host: settings.host, display: settings.display)
        }
        do throws(MsgError) {
            try open()
        } catch {
            close()
            throw error
        }
    }

    /// The greeting, EHLO, STARTTLS, EHLO again, AUTH.
    private func open() throws(MsgError) {
        let greeting = try exchange([], replies: 1, during: "the greeting")[0]
        guard greeting.code == 220 else {
            throw MsgError(greeting.isTransient ? .unreachable : .config, "\(settings.display) does not take mail now: \(greeting.shown)")
        }
        try hello()
        if settings.security == .startTLS {
            guard extensions.contains("STARTTLS") else {
                throw MsgError(.config, "\(settings.display) does not offer STARTTLS, and msg sends nothing in clear text unless tls=none says so")
            }
            if let tls {
                // Added by the handler in the read that brings the 220, before any other byte.
                let probing = self.probing
                let handler = self.handler
                do {
                    try channel.eventLoop.submit {
                        handler.value.expectStartTLS { try Self.tlsHandlers(tls, probing: probing) }
                    }.wait()
                } catch {
                    throw MsgError(.unreachable, "\(settings.display): STARTTLS failed: \(NIOErrorText.describe(error))")
                }
            }
            let ready = try exchange(Array("STARTTLS\r\n".utf8), replies: 1, during: "STARTTLS")[0]
            guard ready.code == 220 else {
                throw MsgError(ready.isTransient ? .unreachable : .config, "\(settings.display) refused STARTTLS: \(ready.shown)")
            }
            // What was offered before TLS is forgotten (RFC 3207 4.2).
            try hello()
        }
        if probing { return }
        if let user = settings.user, let password = settings.password { try authenticate(user, password) }
    }

    private func hello() throws(MsgError) {
        let reply = try exchange(Array("EHLO \(settings.helo)\r\n".utf8), replies: 1, during: "EHLO")[0]
        guard reply.code == 250 else {
            throw MsgError(reply.isTransient ? .unreachable : .config, "\(settings.display) refused EHLO \(settings.helo): \(reply.shown)")
        }
        extensions = Set(reply.lines.dropFirst().map { String($0.uppercased().prefix { $0 != " " }) })
        authMechanisms = Set(reply.lines.dropFirst().filter { $0.uppercased().hasPrefix("AUTH ") }
            .flatMap { $0.uppercased().split(separator: " ").dropFirst().map(String.init) })
    }

    private var authMechanisms: Set<String> = []

    /// AUTH PLAIN, else LOGIN (RFC 4954), only ever inside TLS.
    private func authenticate(_ user: String, _ password: String) throws(MsgError) {
        let reply: SMTPReply
        if authMechanisms.contains("PLAIN") {
            let token = Base64.encode(Array("\0\(user)\0\(password)".utf8))
            reply = try exchange(Array("AUTH PLAIN \(token)\r\n".utf8), replies: 1, during: "AUTH")[0]
        } else if authMechanisms.contains("LOGIN") {
            let first = try exchange(Array("AUTH LOGIN\r\n".utf8), replies: 1, during: "AUTH")[0]
            guard first.code == 334 else { throw authRefused(first) }
            let second = try exchange(Array("\(Base64.encode(Array(user.utf8)))\r\n".utf8), replies: 1, during: "AUTH")[0]
            guard second.code == 334 else { throw authRefused(second) }
            reply = try exchange(Array("\(Base64.encode(Array(password.utf8)))\r\n".utf8), replies: 1, during: "AUTH")[0]
        } else {
            throw MsgError(.config, "\(settings.display) offers no AUTH msg speaks (PLAIN, LOGIN) for user=\(user)")
        }
        guard reply.code == 235 else { throw authRefused(reply) }
    }

    private func authRefused(_ reply: SMTPReply) -> MsgError {
        MsgError(reply.isTransient ? .unreachable : .config, "\(settings.display) refused AUTH as \(settings.user ?? ""): \(reply.shown)")
    }

    /// Sends one mail: `data` is its text with CRLF line ends, dot-stuffed here.
    /// - Returns: its outcome; 2xx delivered, 4xx (421 too) a retry, 5xx dead.
    /// `until`, when given, is when the whole attempt must be over (a session made
    /// for it spent part of it already); else `deadline` from now.
    func send(from: String, to: String, data: [UInt8], utf8: Bool, deadline: MsgDuration, until: NIODeadline? = nil) -> DeliveryOutcome {
        attemptEnd = until ?? .now() + .milliseconds(deadline.milliseconds)
        defer { attemptEnd = nil }
        if utf8 && !extensions.contains("SMTPUTF8") {
            return .failed(MsgError(.rejected, "\(settings.display) does not offer SMTPUTF8, and this mail's addresses are not ASCII"), retryAfter: nil)
        }
        let mail = "MAIL FROM:<\(from)>\(utf8 ? " SMTPUTF8" : "")\(extensions.contains("8BITMIME") ? " BODY=8BITMIME" : "")\r\n"
        let rcpt = "RCPT TO:<\(to)>\r\n"
        var replies: [SMTPReply]
        do throws(MsgError) {
            if extensions.contains("PIPELINING") {
                replies = try exchange(Array((mail + rcpt + "DATA\r\n").utf8), replies: 3, during: "MAIL, RCPT and DATA", deadline: deadline)
            } else {
                replies = try exchange(Array(mail.utf8), replies: 1, during: "MAIL FROM", deadline: deadline)
                if replies[0].isCompletion { replies += try exchange(Array(rcpt.utf8), replies: 1, during: "RCPT TO", deadline: deadline) }
                if replies.count == 2 && replies[1].isCompletion { replies += try exchange(Array("DATA\r\n".utf8), replies: 1, during: "DATA", deadline: deadline) }
            }
        } catch {
            usable = false
            return .failed(error, retryAfter: nil)
        }
        let steps = ["MAIL FROM", "RCPT TO <\(to)>", "DATA"]
        // MAIL and RCPT want 2xx, DATA 354 (RFC 5321 4.3.2).
        if let refused = replies.indices.first(where: { $0 == 2 ? replies[$0].code != 354 : !replies[$0].isCompletion }) {
            // A DATA the server took although what came before failed gets an empty
            // mail ended at once, which it cannot deliver (no recipient).
            if replies.count == 3 && replies[2].code == 354 {
                _ = try? exchange(Array(".\r\n".utf8), replies: 1, during: "the end of DATA", deadline: deadline)
            }
            reset(deadline)
            let reply = replies[refused]
            if reply.isCompletion || !(400..<600).contains(reply.code) {
                // Not an answer for this step (250 to DATA, 354 to MAIL): not a refusal of the mail.
                return .failed(MsgError(.remote, "\(settings.display) answered \(steps[refused]) with \(reply.shown), out of turn"), retryAfter: nil)
            }
            return outcome(reply, step: steps[refused])
        }
        var body = Self.dotStuffed(data)
        body += Array(".\r\n".utf8)
        do throws(MsgError) {
            let final = try exchange(body, replies: 1, during: "the end of DATA", deadline: deadline)[0]
            if !final.isCompletion { reset(deadline) }
            return outcome(final, step: "the mail")
        } catch {
            // The window SMTP leaves (RFC 1047): the mail is out, its reply is not in.
            usable = false
            let e = MsgError(error.code == .timeout ? .timeout : .remote,
                             "\(error.message), after the mail was sent and before the server's answer: it may have been delivered (a resend has the same Message-ID)")
            return .failed(e, retryAfter: nil)
        }
    }

    /// RSET after a refusal, so the next mail starts clean; a server that does not
    /// answer it is left.
    private func reset(_ deadline: MsgDuration) {
        guard usable else { return }
        if (try? exchange(Array("RSET\r\n".utf8), replies: 1, during: "RSET", deadline: deadline))?.first?.code != 250 { usable = false }
    }

    /// What a refusal (or the final reply) makes of the mail.
    private func outcome(_ reply: SMTPReply, step: String) -> DeliveryOutcome {
        if reply.isCompletion { return .delivered(confirmed: false) }
        if reply.code == 530 {
            // Authentication required (RFC 4954): no mail goes until the transport
            // is set up to log in, so the run stops (Transport requirement 4).
            return .failed(MsgError(.config, "\(settings.display) wants AUTH before mail (\(reply.shown)); give user= and password_file="),
                           retryAfter: nil)
        }
        if reply.code == 421 { usable = false }
        let said = "\(settings.display) answered \(step) with \(reply.shown)"
        return .failed(MsgError((500..<600).contains(reply.code) ? .rejected : .remote, said), retryAfter: nil)
    }

    /// Whether the connection can take another mail.
    var isOpen: Bool { usable && channel.isActive }

    /// QUIT, without waiting long for its answer, and close.
    func quit() {
        if isOpen { _ = try? exchange(Array("QUIT\r\n".utf8), replies: 1, during: "QUIT", deadline: .seconds(1)) }
        close()
    }

    func close() { channel.close(promise: nil) }

    deinit { channel.close(promise: nil) }

    /// Writes `bytes` and waits for `replies` replies.
    private func exchange(_ bytes: [UInt8], replies count: Int, during step: String, deadline: MsgDuration? = nil) throws(MsgError) -> [SMTPReply] {
        let handler = self.handler
        let loop = channel.eventLoop
        let promises = (0..<count).map { _ in loop.makePromise(of: SMTPReply.self) }
        let deadline = Self.bounded(deadline ?? settings.connectTimeout, by: attemptEnd)
        loop.execute { handler.value.send(bytes, promises, deadline: deadline) }
        var replies: [SMTPReply] = []
        for promise in promises {
            do { replies.append(try promise.futureResult.wait()) } catch {
                usable = false
                let e = error as? MsgError
                if let explained = explained(e?.underlying ?? error) { throw explained }
                throw MsgError(e?.code ?? .unreachable, "\(settings.display) during \(step): \(e?.message ?? NIOErrorText.describe(error))")
            }
        }
        return replies
    }

    /// `wait`, or what is left until `end` when that is less (at least a millisecond).
    static func bounded(_ wait: MsgDuration, by end: NIODeadline?) -> MsgDuration {
        guard let end else { return wait }
        let left = (end - .now()).nanoseconds / 1_000_000
        return MsgDuration(milliseconds: max(1, min(wait.milliseconds, left)))
    }

    /// A TLS failure in words, with its class (TLSReason).
    private func explained(_ error: any Error) -> MsgError? { Self.explained(error, settings, tls, group) }

    private static func explained(_ error: any Error, _ settings: SMTPSettings,
                                  _ tls: (context: NIOSSLContext, configuration: TLSConfiguration, name: String?)?,
                                  _ group: any EventLoopGroup) -> MsgError? {
        guard let tls else { return nil }
        return TLSReason.explain(error, display: settings.display, name: tls.name ?? settings.host) { () -> NIOSSLCertificate? in
            // The session again, STARTTLS and all, only to read the certificate.
            guard let probe = try? SMTPConnection(settings, group: group, probing: true) else { return nil }
            defer { probe.quit() }
            return probe.peerCertificate
        }
    }

    /// The server's certificate, once TLS is up.
    var peerCertificate: NIOSSLCertificate? {
        try? channel.eventLoop.submit { [channel] in
            try channel.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self).peerCertificate
        }.wait()
    }

    /// A probe verifies nothing, so it checks no name either (SNI is still sent).
    private static func tlsHandlers(_ tls: (context: NIOSSLContext, configuration: TLSConfiguration, name: String?),
                                    probing: Bool) throws -> [any ChannelHandler] {
        if probing { return [try NIOSSLClientHandler(context: tls.context, serverHostname: tls.name)] }
        return try CertificateNames.clientHandlers(tls.context, name: tls.name)
    }

    /// RFC 5321 4.5.2: a line that starts with a dot gets one more.
    static func dotStuffed(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(data.count + 16)
        var lineStart = true
        for byte in data {
            if lineStart && byte == UInt8(ascii: ".") { out.append(byte) }
            out.append(byte)
            lineStart = byte == 0x0A
        }
        if !lineStart { out += [0x0D, 0x0A] }
        return out
    }
}
