import AsyncHTTPClient
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// Reads one answer and keeps only what msg uses of it: the status, the headers
/// and the first ``kept`` bytes of the body. Past those it stops reading and the
/// connection is closed, so a server that answers with 100 MB costs msg no more
/// memory than one that answers with nothing.
///
/// It also notes whether any of the request left: until the request head is
/// written a failure is a connection that never carried it (`unreachable`, not an
/// attempt); from then on the server may have acted on it, so it is an attempt.
final class ResponseReader: HTTPClientResponseDelegate {
    /// What was read of an answer.
    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        /// The first ``ResponseReader/kept`` bytes of the body at most.
        var body: [UInt8]
    }
    typealias Response = Answer

    /// The most of a body kept (the error message shows its first line, cut to 200 characters).
    static let kept = 1024

    /// The error that ends reading a body msg has read enough of.
    struct EnoughRead: Error {}

    private struct State {
        var sent = false
        var head: HTTPResponseHead?
        var body: [UInt8] = []
    }
    private let state = NIOLockedValueBox(State())

    /// Whether the request head was written: the server may have seen the request.
    var sent: Bool { state.withLockedValue { $0.sent } }

    /// The answer as far as it was read, once its head came.
    var answer: Answer? {
        state.withLockedValue { s in s.head.map { Answer(status: Int($0.status.code), headers: $0.headers, body: s.body) } }
    }

    func didSendRequestHead(task: HTTPClient.Task<Answer>, _ head: HTTPRequestHead) {
        state.withLockedValue { $0.sent = true }
    }

    func didReceiveHead(task: HTTPClient.Task<Answer>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        state.withLockedValue { $0.head = head }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Answer>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let enough = state.withLockedValue { s -> Bool in
            let room = Self.kept - s.body.count
            if room > 0, let bytes = buffer.getBytes(at: buffer.readerIndex, length: min(room, buffer.readableBytes)) {
                s.body += bytes
            }
            return buffer.readableBytes > room
        }
        // A failed future ends the task with this error and closes the connection.
        return enough ? task.eventLoop.makeFailedFuture(EnoughRead()) : task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Answer>) throws -> Answer {
        guard let answer else { throw HTTPClientError.remoteConnectionClosed }
        return answer
    }
}
