import NIOCore
import Synchronization

/// What a connection past the listener's caps gets instead of a silent close: its
/// hello is answered with a refusal (``Wire/helloRefused(_:)``, retryable), so the
/// sender says in words why it must try again later; then the listener's side is
/// closed, and the connection once the sender has closed its own. A connection that
/// sends nothing is closed after ``linger``. At most ``mostAtOnce`` are kept so;
/// past that a refused connection is closed at once, unanswered, so a flood of
/// connections cannot hold descriptors by being refused.
final class RefusingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// How long a refused connection is kept for its sender to read the refusal.
    static let linger = TimeAmount.seconds(1)
    /// Refused connections kept at once to be answered.
    static let mostAtOnce = 64
    private static let kept = Atomic<Int>(0)

    /// Whether one more refused connection may be kept to be answered (then it is
    /// counted until it closes: ``release()``).
    static func admit() -> Bool {
        if kept.add(1, ordering: .relaxed).newValue <= mostAtOnce { return true }
        kept.subtract(1, ordering: .relaxed)
        return false
    }

    /// A kept refused connection closed.
    static func release() { kept.subtract(1, ordering: .relaxed) }

    private let line: [UInt8]
    private var answered = false

    init(_ line: [UInt8]) { self.line = line }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        channel.eventLoop.scheduleTask(in: Self.linger) { channel.close(promise: nil) }
        context.fireChannelActive()
    }

    /// The sender's first bytes (its hello) get the refusal; the rest is dropped.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answered else { return }
        answered = true
        context.writeAndFlush(Self.wrapOutboundOut(context.channel.allocator.buffer(bytes: line)), promise: nil)
        context.close(mode: .output, promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let e = event as? ChannelEvent, case .inputClosed = e { context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
