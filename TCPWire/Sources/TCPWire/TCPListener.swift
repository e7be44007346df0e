import MsgKit
import MsgSupport
import NIOCore
import NIOPosix
import Synchronization

/// `msg listen tcp://HOST:PORT`: accepts connections on SwiftNIO's event loops and
/// delivers what they send into the context's sink.
///
/// Descriptors stay bounded: at most ``maxConnections`` connections in all and
/// ``maxPerPeer`` from one address; a connection that has not sent a line (over
/// TLS: finished its handshake and sent a line) within ``helloDeadline``, or with a
/// token not said its hello, is closed. Refusals are reported (``Refusals``).
public final class TCPListener: Listener, ListenerStatistics, ListenerReloading {
    public var connectionCounts: (any ListenerStatistics)? { self }
    public var reloading: (any ListenerReloading)? { self }

    static let maxConnections = 1024
    static let maxPerPeer = 64
    static let helloDeadline = TimeAmount.seconds(5)

    private let address: TCPAddress
    private let security: any WireSecurity
    private let context: ListenerContext
    private let group: MultiThreadedEventLoopGroup
    private let deliverer: SinkDeliverer
    private let connections = OpenConnections()
    private let refusals: Refusals
    private var server: (any Channel)?

    /// - Throws: `config` for a URL that is not `tcp://HOST:PORT`.
    public convenience init(url: PluginURL, context: ListenerContext) throws(MsgError) {
        try self.init(address: try TCPAddress(url, listening: true), security: PlainWire(), context: context)
    }

    /// A listener on `address` over `security`'s stream.
    /// - Throws: `config` for an address other hosts reach where nothing
    ///   authenticates a sender (no token, no client certificates) and the user
    ///   did not allow it.
    public init(address: TCPAddress, security: any WireSecurity, context: ListenerContext) throws(MsgError) {
        self.address = address
        self.security = security
        self.context = context
        refusals = Refusals(report: context.report)
        if !address.isLoopback && address.token == nil && !security.authenticatesClients && !context.openWithoutToken {
            throw MsgError(.config, "\(address.display) can be reached from other hosts and needs no token, so anyone who can connect could deliver into \(context.sinkName); give token= or token_file=\(security.scheme == "tls" ? " or client_ca= (client certificates)" : ""), listen on 127.0.0.1, or allow it with --no-token")
        }
        group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        deliverer = SinkDeliverer(sink: context.sink, deadline: context.deadline)
    }

    public func statistics() -> ListenerCounts {
        let (open, accepted) = connections.counts
        return ListenerCounts(open: open, accepted: accepted, refused: refusals.count.load(ordering: .relaxed))
    }

    /// Reads the security's files again (TLS: the certificate and key), for
    /// connections made from now on; those open are kept as they are.
    public func reload() throws(MsgError) -> String? {
        try (security as? any ReloadableWireSecurity)?.reload()
    }

    public func start() throws(MsgError) -> String {
        let (deliverer, token, maxLine, idle) = (self.deliverer, address.token, context.maxLineBytes, address.idle)
        let security = self.security
        let addSecurity: @Sendable (any Channel, String) throws -> Void = { [refusals] channel, peer in
            let wireGuard = WireGuard(refuseByte: security.otherWireFirstByte, reason: security.otherWireRefusal) {
                refusals.say("refused a connection from \(peer): \(security.otherWireRefusal)")
            }
            try security.addServerHandlers(to: channel, guard: wireGuard) { reason in
                refusals.say("refused a connection from \(peer): \(reason)")
            }
        }
        let (connections, refusals) = (self.connections, self.refusals)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelOption(.autoRead, value: true)
            .childChannelInitializer { channel in
                let key = ObjectIdentifier(channel)
                let peer = channel.remoteAddress?.ipAddress ?? "an unknown address"
                if let full = connections.add(channel, key, peer: peer) {
                    refusals.say("refused a connection from \(peer): \(full)")
                    // Said to the sender too, as a refusal to try again later.
                    guard RefusingHandler.admit() else { return channel.close() }
                    channel.closeFuture.whenComplete { _ in RefusingHandler.release() }
                    let reason = full.hasPrefix("it has") ? "this address has" + full.dropFirst(6) : full
                    let line = Wire.helloRefused(MsgError(.unreachable, "at its limit: \(reason)"))
                    return channel.eventLoop.makeCompletedFuture {
                        // Over the listener's own wire (TLS), so the sender can read it.
                        try addSecurity(channel, peer)
                        try channel.pipeline.syncOperations.addHandler(RefusingHandler(line))
                    }
                }
                channel.closeFuture.whenComplete { _ in connections.remove(key, peer: peer) }
                return channel.eventLoop.makeCompletedFuture {
                    try addSecurity(channel, peer)
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: .milliseconds(idle.milliseconds)))
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder(maxBytes: maxLine)))
                    try channel.pipeline.syncOperations.addHandler(ReceiverHandler(
                        deliverer: deliverer, token: token, maxLineBytes: maxLine, peer: peer, refusals: refusals,
                        helloDeadline: Self.helloDeadline))
                }
            }
        do {
            let channel = try bootstrap.bind(host: address.host, port: address.port).wait()
            server = channel
            guard let bound = channel.localAddress, let port = bound.port else { return address.display }
            var shown = address
            shown.port = port
            security.listening(at: shown.display)
            if !address.isLoopback {
                let open = address.token == nil && !security.authenticatesClients
                context.report("\(shown.display) can be reached from other hosts\(open ? " and takes records without a token (--no-token)" : "")")
            }
            return shown.display
        } catch {
            try? group.syncShutdownGracefully()
            throw MsgError(.unavailable, "cannot listen on \(address.display): \(Self.describe(error))")
        }
    }

    public func stop() {
        try? server?.close().wait()
        let open = connections.all
        for channel in open {
            channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
        for channel in open { try? channel.closeFuture.wait() }
        deliverer.shutdown()
        try? group.syncShutdownGracefully()
        refusals.flush()
        let counts = deliverer.counts
        let again = counts.again > 0 ? "; \(counts.again) sent again were acknowledged without a second delivery" : ""
        context.report("stopped: \(counts.delivered) record\(counts.delivered == 1 ? "" : "s") delivered into \(context.sinkName)\(again)")
    }

    static func describe(_ error: any Error) -> String {
        if let io = error as? IOError { return "\(SystemCalls.describe(io.errnoCode))" }
        return "\(error)"
    }
}

/// The connections open now, so that ``TCPListener/stop()`` can close them, and
/// how many each peer address has.
private final class OpenConnections: Sendable {
    private struct State {
        var channels: [ObjectIdentifier: any Channel] = [:]
        var perPeer: [String: Int] = [:]
        var accepted = 0
    }
    private let state = Mutex(State())

    /// Adds a connection, or says why not (too many in all, or from `peer`).
    func add(_ channel: any Channel, _ key: ObjectIdentifier, peer: String) -> String? {
        state.withLock { s in
            if s.channels.count >= TCPListener.maxConnections {
                return "\(TCPListener.maxConnections) connections are open, the most this listener keeps"
            }
            if s.perPeer[peer, default: 0] >= TCPListener.maxPerPeer {
                return "it has \(TCPListener.maxPerPeer) connections open, the most one address may have"
            }
            s.channels[key] = channel
            s.perPeer[peer, default: 0] += 1
            s.accepted += 1
            return nil
        }
    }

    func remove(_ key: ObjectIdentifier, peer: String) {
        state.withLock { s in
            guard s.channels.removeValue(forKey: key) != nil else { return }
            s.perPeer[peer, default: 1] -= 1
            if s.perPeer[peer] == 0 { s.perPeer[peer] = nil }
        }
    }

    var all: [any Channel] { state.withLock { Array($0.channels.values) } }

    /// Open now, and accepted since the start.
    var counts: (open: Int, accepted: Int) { state.withLock { ($0.channels.count, $0.accepted) } }
}
