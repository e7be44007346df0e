import MsgKit
import NIOCore

/// One connection on the receiving side: answers every line, in order, only after
/// the sink has made the record durable (msg-tcp(7)).
///
/// Bounded: it stops reading while `maxPending` lines await their answer or the
/// peer is not reading its answers, so a fast or stalled peer cannot grow memory.
final class ReceiverHandler: ChannelDuplexHandler {
    typealias InboundIn = WireLine
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let deliverer: SinkDeliverer
    private let token: String?
    private let maxLineBytes: Int
    private let maxPending = 1024
    private let peer: String
    private let refusals: Refusals
    private let helloDeadline: TimeAmount?
    private var helloTimer: Scheduled<Void>?
    /// Told once, when the sender has proved itself: its hello accepted (with a
    /// token) or its first record read (``OpenConnections``).
    private let proved: @Sendable () -> Void
    private var provedSaid = false

    private var authenticated: Bool
    /// Whether the sender has sent a whole line yet (over TLS: finished its handshake too).
    private var spoke = false
    private var lineNumber = 0
    /// Answers not yet written, in line order; nil until ready.
    private var answers = CircularBuffer<[UInt8]?>()
    /// How many answers were written before the first in `answers`.
    private var written = 0
    private var closeAfterAnswers = false
    private var inputDone = false
    private var readHeld = false
    private var flushScheduled = false

    init(deliverer: SinkDeliverer, token: String?, maxLineBytes: Int, peer: String, refusals: Refusals, helloDeadline: TimeAmount?,
         proved: @escaping @Sendable () -> Void = {}) {
        self.proved = proved
        self.deliverer = deliverer
        self.token = token
        self.maxLineBytes = maxLineBytes
        self.peer = peer
        self.refusals = refusals
        self.helloDeadline = helloDeadline
        authenticated = token == nil
    }

    /// A connection that has not sent a whole line in time (over TLS: its
    /// handshake, which comes first, included), or with a token not said its hello,
    /// is closed, so connections that never finish cannot use up the listener's
    /// descriptors and fill its cap.
    func channelActive(context: ChannelHandlerContext) {
        if let helloDeadline {
            helloTimer = context.eventLoop.assumeIsolated().scheduleTask(in: helloDeadline) {
                guard (!self.authenticated || !self.spoke), !self.inputDone else { return }
                let what = self.token != nil ? "no hello" : "no line (over TLS: no finished handshake)"
                self.refusals.say("closed a connection from \(self.peer): \(what) within \(helloDeadline.nanoseconds / 1_000_000_000)s")
                context.close(promise: nil)
            }
        }
        context.fireChannelActive()
    }

    /// A connection the peer closed before the deadline is not reported as idle.
    func channelInactive(context: ChannelHandlerContext) {
        helloTimer?.cancel()
        helloTimer = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !inputDone else { return }
        spoke = true
        lineNumber += 1
        let slot = written + answers.count
        answers.append(nil)
        switch unwrapInboundIn(data) {
        case .tooLong(let length):
            answer(slot, Wire.refused(id: nil, MsgError(.rejected, "line \(lineNumber) is \(length) bytes, over the limit of \(maxLineBytes)")), context)
        case .line(let buffer):
            handle(buffer, slot: slot, context: context)
        }
    }

    private func handle(_ buffer: ByteBuffer, slot: Int, context: ChannelHandlerContext) {
        let bytes = Array(buffer.readableBytesView)
        let value: JSONValue
        do { value = try JSONParser.parse(bytes) } catch {
            answer(slot, Wire.refused(id: nil, MsgError(.rejected, "line \(lineNumber): invalid JSON: \(error)")), context)
            return
        }
        let id = value["id"]?.stringValue
        switch value["op"]?.stringValue {
        case "hello"?:
            if let token, !Wire.sameSecret(value["token"]?.stringValue ?? "", token) {
                refusals.say("refused a connection from \(peer): \(value["token"] == nil ? "no" : "a wrong") token")
                closeAfterAnswers = true
                inputDone = true
                answer(slot, Wire.helloRefused(MsgError(.rejected, "wrong or missing token")), context)
            } else {
                authenticated = true
                prove()
                answer(slot, Wire.helloAccepted(), context)
            }
            return
        case _ where !authenticated:
            refusals.say("refused a connection from \(peer): it sent a record before its hello and token")
            closeAfterAnswers = true
            inputDone = true
            answer(slot, Wire.refused(id: id, MsgError(.rejected, "this receiver needs a token: send {\"op\":\"hello\",\"token\":…} first")), context)
            return
        case "lookup"?:
            guard let id else {
                answer(slot, Wire.refused(id: nil, MsgError(.rejected, "line \(lineNumber): lookup needs an \"id\"")), context)
                return
            }
            let promise = context.eventLoop.makePromise(of: Bool?.self)
            deliverer.submit(.lookup(id, promise))
            promise.futureResult.assumeIsolated().whenComplete { result in
                switch result {
                case .success(let delivered): self.answer(slot, Wire.lookupAnswer(id: id, delivered: delivered), context)
                case .failure(let error):
                    let e = error as? MsgError ?? MsgError(.remote, "\(error)")
                    self.answer(slot, Wire.refused(id: id, e), context)
                }
            }
        case let op?:
            answer(slot, Wire.refused(id: id, MsgError(.rejected, "line \(lineNumber): unknown op '\(op)'; known: hello, lookup")), context)
        case nil:
            let message: Message
            do throws(MsgError) { message = try Message(json: value) } catch {
                answer(slot, Wire.refused(id: id, MsgError(.rejected, "line \(lineNumber): \(error.message)")), context)
                return
            }
            prove()
            let promise = context.eventLoop.makePromise(of: DeliveryOutcome.self)
            deliverer.submit(.deliver(message, promise))
            promise.futureResult.assumeIsolated().whenSuccess { outcome in
                switch outcome {
                case .delivered: self.answer(slot, Wire.accepted(id: message.id), context)
                case .failed(let error, let retryAfter): self.answer(slot, Wire.refused(id: message.id, error, retryAfter: retryAfter), context)
                }
            }
        }
    }

    private func prove() {
        guard !provedSaid else { return }
        provedSaid = true
        proved()
    }

    /// Stores the answer to the line numbered `slot` (from 0) and writes every answer
    /// that is ready, in order.
    private func answer(_ slot: Int, _ bytes: [UInt8], _ context: ChannelHandlerContext) {
        let index = slot - written
        guard index >= 0, index < answers.count else { return }
        answers[answers.index(answers.startIndex, offsetBy: index)] = bytes
        var wrote = false
        while let first = answers.first, let ready = first {
            answers.removeFirst()
            written += 1
            context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: ready)), promise: nil)
            wrote = true
        }
        if wrote && !flushScheduled {
            // Answers completed together (a batch made durable at once) go out in one
            // write: flush once, after the other completions queued on this loop.
            flushScheduled = true
            context.eventLoop.assumeIsolated().execute {
                self.flushScheduled = false
                context.flush()
            }
        }
        if answers.isEmpty && closeAfterAnswers {
            context.flush()
            context.close(promise: nil)
        } else {
            resumeReadingIfPossible(context)
        }
    }

    func read(context: ChannelHandlerContext) {
        if answers.count >= maxPending || !context.channel.isWritable || inputDone {
            readHeld = true
        } else {
            context.read()
        }
    }

    private func resumeReadingIfPossible(_ context: ChannelHandlerContext) {
        guard readHeld, !inputDone, answers.count < maxPending, context.channel.isWritable else { return }
        readHeld = false
        context.read()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        resumeReadingIfPossible(context)
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Nothing read for the listener's idle limit (`idle=`): closed when nothing is
        // owed, so idle connections cannot hold its descriptors; a sender makes a new
        // one for its next record.
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            if answers.isEmpty && !inputDone { context.close(promise: nil) }
            return
        }
        if event is ChannelShouldQuiesceEvent || (event as? ChannelEvent) == .inputClosed {
            // The peer is done sending, or the listener is stopping: answer what is in
            // flight, then close.
            inputDone = true
            closeAfterAnswers = true
            if answers.isEmpty {
                context.flush()
                context.close(promise: nil)
            }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
