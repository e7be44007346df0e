import MsgKit
import NIOCore

/// The first handler of a listener's connection: looks at the first byte the
/// client sends and, when it is the other wire's (a TLS handshake to a clear-text
/// listener, msg's `{` to a TLS one), answers in clear text with a refusal of its
/// hello that says which (a configuration error: retrying cannot help) and closes,
/// so neither side waits for a deadline to learn it. Otherwise it steps aside.
public final class WireGuard: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    private let refuseByte: UInt8
    private let answer: [UInt8]
    private let say: @Sendable () -> Void
    private var refused = false

    /// - Parameters: `refuseByte`, the other wire's first byte; `reason`, what the
    ///   refusal says; `say`, reports the refusal on the listener's side.
    init(refuseByte: UInt8, reason: String, say: @escaping @Sendable () -> Void) {
        self.refuseByte = refuseByte
        answer = Wire.helloRefused(MsgError(.config, reason))
        self.say = say
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        let buffer = unwrapInboundIn(data)
        guard let first = buffer.readableBytesView.first else { return }
        if first == refuseByte {
            refused = true
            say()
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: answer)), promise: nil)
            context.close(mode: .output, promise: nil)
            context.eventLoop.assumeIsolated().scheduleTask(in: RefusingHandler.linger) { context.close(promise: nil) }
            return
        }
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
