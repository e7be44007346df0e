import MsgKit
import NIOCore
import NIOSSL

/// The client side of one SMTP connection: matches replies to the commands
/// waiting for one, in order (the server answers in order, RFC 2920). The server
/// speaks first: the greeting, which may come before anyone waits for it, is kept
/// for the first to ask; any other reply no command waits for is a protocol error
/// that ends the connection (a server that answers ahead of the data's final dot,
/// or injects replies, is never believed).
///
/// STARTTLS: the TLS handler goes in front of the decoder in the very read that
/// brings the 220, so nothing the server sent in clear after it can be read as if
/// it came through TLS; bytes already behind the 220 end the connection, nothing
/// sent (RFC 3207 4.2).
final class SMTPClientHandler: ChannelInboundHandler {
    typealias InboundIn = SMTPReply
    typealias OutboundOut = ByteBuffer

    private var waiting = CircularBuffer<EventLoopPromise<SMTPReply>>()
    private var early = CircularBuffer<SMTPReply>()
    private var greeted = false
    /// Set while STARTTLS waits for its answer: makes the TLS handler for a 220.
    private var startTLS: (() throws -> [any ChannelHandler])?
    private(set) var failure: MsgError?
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// Writes `bytes` (commands, or a message's data; may be empty) and completes
    /// `promises` with the next replies, in order; past `deadline` they fail with
    /// `timeout`, and with `unreachable` when the connection drops first. Runs on
    /// the channel's event loop.
    func send(_ bytes: [UInt8], _ promises: [EventLoopPromise<SMTPReply>], deadline: MsgDuration) {
        guard let context, failure == nil else {
            let error = failure ?? MsgError(.unreachable, "the connection is closed")
            for promise in promises { promise.fail(error) }
            return
        }
        if !bytes.isEmpty {
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
        }
        for promise in promises {
            if let reply = early.popFirst() { promise.succeed(reply) } else { waiting.append(promise) }
        }
        guard let last = promises.last else { return }
        let timer = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(deadline.milliseconds)) {
            guard self.waiting.contains(where: { $0.futureResult === last.futureResult }) else { return }
            self.fail(MsgError(.timeout, "no answer within the \(deadline) deadline"), context)
        }
        last.futureResult.whenComplete { _ in timer.cancel() }
    }

    /// The next reply answers STARTTLS: on a 220, `makeHandler`'s handler goes in
    /// front of the pipeline before anything else is read. Runs on the event loop.
    func expectStartTLS(_ makeHandler: @escaping () throws -> [any ChannelHandler]) {
        startTLS = makeHandler
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let reply = unwrapInboundIn(data)
        defer { greeted = true }
        guard let promise = waiting.popFirst() else {
            if !greeted && early.isEmpty {
                early.append(reply)
            } else {
                fail(MsgError(.remote, "the server sent a reply no command asked for (\(reply.shown))"), context)
            }
            return
        }
        if let makeHandler = startTLS {
            startTLS = nil
            if reply.code == 220 {
                guard !reply.trailing else {
                    promise.fail(MsgError(.remote, "the server sent more behind its STARTTLS 220, in clear text (RFC 3207 4.2); nothing was sent"))
                    fail(MsgError(.remote, "the server sent text behind its STARTTLS 220"), context)
                    return
                }
                do {
                    try context.pipeline.syncOperations.addHandlers(try makeHandler(), position: .first)
                } catch {
                    promise.fail(error)
                    fail(MsgError(.unreachable, "STARTTLS failed: \(error)", underlying: error), context)
                    return
                }
            }
        }
        promise.succeed(reply)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(MsgError(.unreachable, "the server closed the connection"), context)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let e = error as? NIOSSLError, case .uncleanShutdown = e {
            // A server that closes without TLS's close_notify: closed, as in clear text.
            fail(MsgError(.unreachable, "the server closed the connection"), context)
            return
        }
        let said = (error as? SMTPProtocolError).map { "the server \($0.description.hasPrefix("a ") ? "sent " : "")\($0)" } ?? "connection lost: \(error)"
        fail(MsgError(error is SMTPProtocolError ? .remote : .unreachable, said, underlying: error), context)
    }

    /// Once anything goes wrong, replies can no longer be matched: fail every
    /// waiting command, and every later one, and close.
    private func fail(_ error: MsgError, _ context: ChannelHandlerContext) {
        if failure == nil { failure = error }
        while let promise = waiting.popFirst() { promise.fail(error) }
        context.close(promise: nil)
    }
}
