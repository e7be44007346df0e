import NIOCore
import PostgresNIO
import Synchronization

/// The one query in flight on a connection, failed when the connection closes.
///
/// PostgresNIO (1.33) sends a query with `channel.write(…, promise: nil)`: when the
/// channel has closed under it (the server restarted), the write fails and the
/// query's future is never completed, so a caller waiting on it waits forever.
/// Each query's result therefore goes through a promise of ours, which either the
/// query or the connection's close completes, whichever comes first. One callback
/// on `closeFuture` serves every query, so nothing piles up on a long-lived connection.
final class PendingQuery: Sendable {
    /// Why a query failed: the connection closed before it finished.
    struct Closed: Error {}

    private struct State {
        var closed = false
        var next = 0
        var current: (id: Int, promise: EventLoopPromise<PostgresQueryResult>)?
    }
    private let state = Mutex(State())

    /// Watches `connection` for its close.
    init(_ connection: PostgresConnection) {
        connection.closeFuture.whenComplete { [self] _ in
            let waiting = state.withLock { (s: inout State) -> EventLoopPromise<PostgresQueryResult>? in
                s.closed = true
                defer { s.current = nil }
                return s.current?.promise
            }
            waiting?.fail(Closed())
        }
    }

    /// Runs `send` and waits for its result or the connection's close.
    func run(on loop: any EventLoop, _ send: () -> EventLoopFuture<PostgresQueryResult>) throws -> PostgresQueryResult {
        let promise = loop.makePromise(of: PostgresQueryResult.self)
        let id = try state.withLock { (s: inout State) throws -> Int in
            if s.closed { throw Closed() }
            s.next += 1
            s.current = (s.next, promise)
            return s.next
        }
        send().whenComplete { [self] result in
            let mine = state.withLock { (s: inout State) -> Bool in
                guard s.current?.id == id else { return false }
                s.current = nil
                return true
            }
            if mine { promise.completeWith(result) }
        }
        return try promise.futureResult.wait()
    }
}
