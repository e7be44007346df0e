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

    /// Sends `lines` in one write and completes `promises` (one per line) with
    /// their answers, failed with `timeout` past `deadline` or with `unreachable`
    /// when the connection drops first. Runs on the channel's event loop.
    func send(_ lines: [[UInt8]], _ promises: [EventLoopPromise<Wire.Answer>], deadline: MsgDuration) {
        guard let context, failure == nil else {
            let error = failure ?? MsgError(.unreachable, "the connection is closed")
            for promise in promises { promise.fail(error) }
            return
        }
        var buffer = context.channel.allocator.buffer(capacity: lines.reduce(0) { $0 + $1.count })
        for line in lines { buffer.writeBytes(line) }
        waiting.append(contentsOf: promises)
        context.writeAndFlush(NIOAny(buffer), promise: nil)
        // One timer for the lines sent together: they share the deadline, and the
        // answers come in order, so the last one is the one to watch.
        guard let last = promises.last else { return }
        let timer = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(deadline.milliseconds)) {
            // Only if still unanswered: the timer may have been due as the answer came.
            guard self.waiting.contains(where: { $0.futureResult === last.futureResult }) else { return }
            self.fail(MsgError(.timeout, "no answer within the \(deadline) deadline"), context)
        }
        last.futureResult.whenComplete { _ in timer.cancel() }
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
        // The error is kept, for the stream's security to word its own (a TLS alert).
        fail(MsgError(.unreachable, "connection lost: \(TCPListener.describe(error))", underlying: error), context)
    }

    /// Once anything goes wrong the answers can no longer be matched: fail every
    /// waiting request, and every later one, and close.
    private func fail(_ error: MsgError, _ context: ChannelHandlerContext) {
        if failure == nil { failure = error }
        while let promise = waiting.popFirst() { promise.fail(error) }
        context.close(promise: nil)
    }
}
