import MsgKit
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// Fetches a receiver's certificate without verifying it, only to say why it did
/// not verify (expired, not yet valid, signed by a CA msg does not trust). The
/// connection is closed as soon as the handshake is done: nothing is sent over it.
public enum TLSProbe {
    public static func peerCertificate(host: String, port: Int, configuration: TLSConfiguration, serverName: String?) -> NIOSSLCertificate? {
        var tls = configuration
        tls.certificateVerification = .none
        guard let context = try? NIOSSLContext(configuration: tls) else { return nil }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(.seconds(3))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: serverName))
                    try channel.pipeline.syncOperations.addHandler(HandshakeWaiter())
                }
            }
        guard let channel = try? bootstrap.connect(host: host, port: port).wait() else { return nil }
        defer { channel.close(promise: nil) }
        let certificate = channel.eventLoop.flatSubmit { () -> EventLoopFuture<NIOSSLCertificate?> in
            guard let waiter = try? channel.pipeline.syncOperations.handler(type: HandshakeWaiter.self) else {
                return channel.eventLoop.makeSucceededFuture(nil)
            }
            return waiter.done.futureResult.map {
                (try? channel.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self))?.peerCertificate
            }
        }
        let timeout = channel.eventLoop.scheduleTask(in: .seconds(3)) { channel.close(promise: nil) }
        defer { timeout.cancel() }
        return (try? certificate.wait()) ?? nil
    }
}

/// Completes ``done`` when the handshake is (or fails, or the connection closes).
private final class HandshakeWaiter: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    var done: EventLoopPromise<Void>!

    func handlerAdded(context: ChannelHandlerContext) { done = context.eventLoop.makePromise() }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let e = event as? TLSUserEvent, case .handshakeCompleted = e { done.succeed(()) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { done.fail(error) }
    func channelInactive(context: ChannelHandlerContext) {
        done.fail(ChannelError.alreadyClosed)
        context.fireChannelInactive()
    }
}
