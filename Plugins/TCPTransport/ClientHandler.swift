import MsgKit
import NIOCore

/// The sending side of one connection: matches each answer line to the oldest
/// request waiting for one (the receiver answers in order).
final class ClientHandler: ChannelInboundHandler {
    typealias InboundIn = WireLine

    private var waiting = CircularBuffer<EventLoopPromise<Wire.Answer>>()
    private var failure: MsgError?
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// Sends `line` and returns the future of its answer, failed with `timeout` past
    /// `deadline` or with `unreachable` when the connection drops first.
    /// Runs on the channel's event loop.
    func send(_ line: [UInt8], deadline: MsgDuration, on loop: any EventLoop) -> EventLoopFuture<Wire.Answer> {
        let promise = loop.makePromise(of: Wire.Answer.self)
        guard let context else {
            promise.fail(failure ?? MsgError(.unreachable, "the connection is closed"))
            return promise.futureResult
        }
        if let failure {
            promise.fail(failure)
            return promise.futureResult
        }
        waiting.append(promise)
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(bytes: line)), promise: nil)
        let timer = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(deadline.milliseconds)) {
            // Only if still unanswered: the timer may have been due as the answer came.
            guard self.waiting.contains(where: { $0.futureResult === promise.futureResult }) else { return }
            self.fail(MsgError(.timeout, "no answer within the \(deadline) deadline"), context)
        }
        promise.futureResult.whenComplete { _ in timer.cancel() }
        return promise.futureResult
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .line(let buffer) = unwrapInboundIn(data) else {
            fail(MsgError(.remote, "the receiver sent an overlong line"), context)
            return
        }
        guard let promise = waiting.popFirst() else {
            fail(MsgError(.remote, "the receiver sent an answer nobody asked for"), context)
            return
        }
        do throws(MsgError) {
            promise.succeed(try Wire.answer(Array(buffer.readableBytesView)))
        } catch {
            promise.fail(error)
            fail(error, context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(MsgError(.unreachable, "the receiver closed the connection"), context)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        fail(MsgError(.unreachable, "connection lost: \(TCPListener.describe(error))"), context)
    }

    /// Once anything goes wrong the answers can no longer be matched: fail every
    /// waiting request, and every later one, and close.
    private func fail(_ error: MsgError, _ context: ChannelHandlerContext) {
        if failure == nil { failure = error }
        while let promise = waiting.popFirst() { promise.fail(error) }
        context.close(promise: nil)
    }
}
