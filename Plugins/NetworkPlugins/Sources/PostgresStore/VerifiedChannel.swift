import MsgKit
import MsgSupport
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import TLSCommon

/// The connection of `sslmode=verify-full` and `verify-ca`, made by msg rather
/// than PostgresNIO: TCP, the SSLRequest, the server's one `S` (a byte it sends
/// behind it before TLS begins is refused: CVE-2021-23222), then the TLS handshake
/// with tls://'s handlers (verify-full: ``NameGate``, DNS names for a host name,
/// never the subject), all within the connect timeout. The checked channel is
/// handed to PostgresNIO with its own TLS off, so the startup message and the
/// password go only to a server whose certificate is for the host. Every
/// reconnection comes this way too.
enum VerifiedChannel {
    /// - Throws: `config` for a certificate that does not verify or is for another
    ///   name, a server without TLS or one that sent bytes behind its `S`;
    ///   `unreachable` for a server that cannot be reached within `timeout`.
    static func open(_ address: PostgresAddress, context: NIOSSLContext, timeout: TimeAmount) throws(MsgError) -> any Channel {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let ready = loop.makePromise(of: Void.self)
        let host = address.host
        let name = address.tls == .verifyFull && !TLSReason.isAddress(host) ? host : nil
        let sni = TLSReason.isAddress(host) ? nil : host
        let expiry = loop.scheduleTask(in: timeout) { ready.fail(ChannelError.connectTimeout(timeout)) }
        let bootstrap = ClientBootstrap(group: loop).connectTimeout(timeout).channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(SSLRequest(context: context, name: name, sni: sni, ready: ready))
            }
        }
        let connected = bootstrap.connect(host: host, port: address.port)
        connected.whenFailure { ready.fail($0) }
        do {
            let channel = try connected.flatMap { channel in
                ready.futureResult.map { channel }.flatMapErrorThrowing { error in
                    channel.close(promise: nil)
                    throw error
                }
            }.wait()
            expiry.cancel()
            return channel
        } catch {
            expiry.cancel()
            throw explain(error, address, timeout: timeout)
        }
    }

    /// An error of ``open`` in one line.
    static func explain(_ error: any Error, _ address: PostgresAddress, timeout: TimeAmount) -> MsgError {
        let at = "connecting to \(address.display)"
        if let e = error as? MsgError { return e }
        if let e = error as? NameMismatch {
            return MsgError(.config, "\(at): \(e.description); nothing was sent (sslmode=verify-full checks the host against the certificate's DNS names)")
        }
        if let e = error as? ChannelError, case .connectTimeout = e {
            return MsgError(.unreachable, "\(at): no TLS connection within \(timeout.nanoseconds / 1_000_000) ms (connect_timeout=)")
        }
        if let e = error as? ChannelError, case .eof = e {
            return MsgError(.unreachable, "\(at): the server closed the connection before TLS was set up; trying again later")
        }
        if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError {
            let code = TLSReason.code(error)
            if code == "EOF during handshake" {
                return MsgError(.unreachable, "\(at): the server closed the connection during the TLS handshake; trying again later")
            }
            let why = code == "CERTIFICATE_VERIFY_FAILED"
                ? "its certificate does not verify (CERTIFICATE_VERIFY_FAILED: not signed by a CA of sslrootcert=, PGSSLROOTCERT or the system's, or expired)"
                : "the TLS handshake failed (\(code ?? TLSReason.short(error)))"
            return MsgError(.config, "\(at): \(why); nothing was sent")
        }
        return MsgError(.unreachable, "\(at): \(BlockingConnection.reason(error))")
    }
}

/// Asks for TLS and, on the server's `S` alone, puts the TLS handlers in its
/// place; completes `ready` once the handshake is done and the name checked.
private final class SSLRequest: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    /// Int32 length 8, then the SSLRequest code 80877103.
    static let request: [UInt8] = [0, 0, 0, 8, 0x04, 0xD2, 0x16, 0x2F]

    private let context: NIOSSLContext
    private let name: String?
    private let sni: String?
    private let ready: EventLoopPromise<Void>

    init(context: NIOSSLContext, name: String?, sni: String?, ready: EventLoopPromise<Void>) {
        self.context = context
        self.name = name
        self.sni = sni
        self.ready = ready
    }

    func channelActive(context: ChannelHandlerContext) {
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(bytes: Self.request)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        let refusal: MsgError
        switch buffer.readableBytesView.first {
        case UInt8(ascii: "S") where buffer.readableBytes == 1:
            do {
                let pipeline = context.pipeline.syncOperations
                let tls = try NIOSSLClientHandler(context: self.context, serverHostname: sni)
                var handlers: [any ChannelHandler] = [tls]
                if let name { handlers.append(NameGate(name: name)) }
                handlers.append(HandshakeDone(ready))
                try pipeline.addHandlers(handlers, position: .before(self))
                pipeline.removeHandler(context: context, promise: nil)
            } catch {
                ready.fail(error)
                context.close(promise: nil)
            }
            return
        case UInt8(ascii: "S"):
            refusal = MsgError(.config, "the server sent \(buffer.readableBytes - 1) bytes behind its yes to TLS, before TLS began (CVE-2021-23222: an injection by a man in the middle?); nothing was sent")
        case UInt8(ascii: "N"):
            refusal = MsgError(.config, "the server does not offer TLS, and sslmode=verify-full or verify-ca requires it")
        default:
            refusal = MsgError(.config, "the server did not answer the request for TLS as PostgreSQL does; nothing was sent")
        }
        ready.fail(refusal)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        ready.fail(ChannelError.eof)
        context.fireChannelInactive()
    }
}

/// Completes `ready` when the handshake is done (behind a ``NameGate``: and the
/// name checked), fails it on an error or a close before; then steps aside.
private final class HandshakeDone: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    private let ready: EventLoopPromise<Void>

    init(_ ready: EventLoopPromise<Void>) { self.ready = ready }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSUserEvent {
            ready.succeed()
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        ready.fail(ChannelError.eof)
        context.fireChannelInactive()
    }
}
