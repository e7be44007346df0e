import MsgKit
import NIOCore
import NIOPosix
import Synchronization

/// `msg listen tcp://HOST:PORT`: accepts any number of connections on SwiftNIO's
/// event loops and delivers what they send into the context's sink.
final class TCPListener: Listener {
    private let address: TCPAddress
    private let context: ListenerContext
    private let group: MultiThreadedEventLoopGroup
    private let deliverer: SinkDeliverer
    private let connections = OpenConnections()
    private var server: (any Channel)?

    /// - Throws: `config` for a URL that is not `tcp://HOST:PORT`.
    init(url: PluginURL, context: ListenerContext) throws(MsgError) {
        address = try TCPAddress(url, listening: true)
        self.context = context
        group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        deliverer = SinkDeliverer(sink: context.sink, deadline: context.deadline)
    }

    func start() throws(MsgError) -> String {
        let (deliverer, token, maxLine) = (self.deliverer, address.token, context.maxLineBytes)
        let connections = self.connections
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelOption(.autoRead, value: true)
            .childChannelInitializer { channel in
                let key = ObjectIdentifier(channel)
                connections.add(channel, key)
                channel.closeFuture.whenComplete { _ in connections.remove(key) }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder(maxBytes: maxLine)))
                    try channel.pipeline.syncOperations.addHandler(ReceiverHandler(deliverer: deliverer, token: token, maxLineBytes: maxLine))
                }
            }
        do {
            let channel = try bootstrap.bind(host: address.host, port: address.port).wait()
            server = channel
            guard let bound = channel.localAddress, let port = bound.port else { return address.display }
            var shown = address
            shown.port = port
            return shown.display
        } catch {
            try? group.syncShutdownGracefully()
            throw MsgError(.unavailable, "cannot listen on \(address.display): \(Self.describe(error))")
        }
    }

    func stop() {
        try? server?.close().wait()
        let open = connections.all
        for channel in open {
            channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
        for channel in open { try? channel.closeFuture.wait() }
        deliverer.shutdown()
        try? group.syncShutdownGracefully()
        let n = deliverer.deliveredCount
        context.report("stopped: \(n) record\(n == 1 ? "" : "s") delivered into the inbox")
    }

    static func describe(_ error: any Error) -> String {
        if let io = error as? IOError { return "\(SystemCalls.describe(io.errnoCode))" }
        return "\(error)"
    }
}

/// The connections open now, so that ``TCPListener/stop()`` can close them.
private final class OpenConnections: Sendable {
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])

    func add(_ channel: any Channel, _ key: ObjectIdentifier) { channels.withLock { $0[key] = channel } }
    func remove(_ key: ObjectIdentifier) { _ = channels.withLock { $0.removeValue(forKey: key) } }
    var all: [any Channel] { channels.withLock { Array($0.values) } }
}
