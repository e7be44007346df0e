import MsgKit
import MsgSupport
import NIOCore
import NIOPosix

/// One client connection, used from a thread that is not its event loop: each
/// request hops onto the loop and comes back as a future to wait on.
final class TCPConnection {
    private let channel: any Channel
    private let handler: NIOLoopBound<ClientHandler>

    /// Connects and says hello.
    /// - Throws: `unreachable` when the receiver cannot be reached in time or is at
    ///   its limits; `config` when it refuses the token, speaks the other wire, or
    ///   (TLS) cannot be verified or refuses this sender's certificate.
    init(_ address: TCPAddress, security: any WireSecurity, group: any EventLoopGroup) throws(MsgError) {
        // The handler is made before the connection, so it is there to ask even when
        // the connection closed at once (a TLS handshake refused) and left the pipeline.
        let loop = group.next()
        let handler: NIOLoopBound<ClientHandler>
        do {
            handler = try loop.submit { NIOLoopBound(ClientHandler(), eventLoop: loop) }.wait()
        } catch {
            throw MsgError(.unreachable, "cannot connect to \(address.display): \(NIOErrorText.describe(error))")
        }
        self.handler = handler
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(.milliseconds(address.connectTimeout.milliseconds))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try security.addClientHandlers(to: channel, address: address)
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder(maxBytes: 1 << 20)))
                    try channel.pipeline.syncOperations.addHandler(handler.value)
                }
            }
        do {
            channel = try bootstrap.connect(host: address.host, port: address.port).wait()
        } catch {
            if let explained = security.explain(error, address: address) { throw explained }
            throw NIOErrorText.connectFailure(error, host: address.host, display: address.display)
        }
        let hello: Wire.Answer
        do {
            hello = try send([Wire.hello(token: address.token)], deadline: address.connectTimeout)[0].wait()
        } catch {
            close()
            if let explained = security.explain((error as? MsgError)?.underlying ?? error, address: address) { throw explained }
            throw MsgError(.unreachable, "\(address.display) did not answer hello: \(NIOErrorText.describe(error))")
        }
        guard case .hello(refused: nil) = hello else {
            close()
            if case .hello(refused: let refusal?) = hello {
                // At its connection limit: a passing state, tried again later.
                if refusal.code.isRetryable {
                    throw MsgError(.unreachable, "\(address.display) refused the connection for now (\(refusal.message)); trying again later")
                }
                // A definite answer, not a passing fault: retrying cannot help until
                // the token (or the scheme) is fixed (Transport requirement 4: config
                // stops the run).
                if refusal.code == .config { throw MsgError(.config, "\(address.display) refused the connection: \(refusal.message)") }
                throw MsgError(.config, "\(address.display) refused the connection: \(refusal.message); check the token")
            }
            throw MsgError(.unreachable, "\(address.display) does not speak the msg protocol (bad answer to hello)")
        }
    }

    /// Sends lines in one write; the future of each answer fails with `timeout` past `deadline`.
    func send(_ lines: [[UInt8]], deadline: MsgDuration) -> [EventLoopFuture<Wire.Answer>] {
        let handler = self.handler
        let loop = channel.eventLoop
        let promises = lines.map { _ in loop.makePromise(of: Wire.Answer.self) }
        loop.execute { handler.value.send(lines, promises, deadline: deadline) }
        return promises.map(\.futureResult)
    }

    /// Whether the connection is still up: false once the receiver has closed it
    /// (a restart, an idle limit) and the close has been seen.
    var isOpen: Bool { channel.isActive }

    func close() {
        channel.close(promise: nil)
    }

    deinit { channel.close(promise: nil) }
}
