#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport
import NIOCore
import NIOPosix
import Synchronization

/// `msg listen tcp://HOST:PORT`: accepts connections on SwiftNIO's event loops and
/// delivers what they send into the context's sink.
///
/// Descriptors stay bounded: at most ``maxConnections`` connections in all and
/// ``maxPerPeer`` from one address, of which at most ``maxUnprovedPerPeer`` not yet
/// proved (no accepted hello, no record read); a connection that has not sent a
/// line (over TLS: finished its handshake and sent a line) within the address's
/// `hello_timeout` (5 s), or with a token not said its hello, is closed. When all
/// ``maxConnections`` are open, a newcomer from an address holding fewer unproved
/// connections than another takes the place of that one's oldest unproved
/// connection, as OpenSSH's MaxStartups drops unauthenticated ones: handshakes
/// that stall, from however many addresses, cannot keep a good sender out.
/// Refusals are reported (``Refusals``).
public final class TCPListener: Listener, ListenerStatistics, ListenerReloading {
    public var connectionCounts: (any ListenerStatistics)? { self }
    public var reloading: (any ListenerReloading)? { self }

    static let maxConnections = 1024
    static let maxPerPeer = 64
    static let maxUnprovedPerPeer = 32

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
        Self.raiseDescriptorLimit()
        group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        deliverer = SinkDeliverer(sink: context.sink, deadline: context.deadline)
    }

    /// Room for every connection the caps allow besides the process's own files:
    /// the soft limit of descriptors raised toward the hard one (it is 1,024 on
    /// many systems, which the connections alone would reach).
    static func raiseDescriptorLimit() {
        var limit = rlimit()
        let wanted = rlim_t(maxConnections + 512)
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < wanted else { return }
        limit.rlim_cur = min(wanted, limit.rlim_max)
        _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
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
        let helloDeadline = TimeAmount.milliseconds(address.helloTimeout.milliseconds)
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
                let (full, evicted) = connections.add(channel, key, peer: peer)
                if let full {
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
                if let evicted {
                    refusals.say("closed a connection from \(evicted.peer) that had not proved itself, for one from \(peer): \(TCPListener.maxConnections) connections are open, the most this listener keeps")
                    evicted.channel.close(promise: nil)
                }
                channel.closeFuture.whenComplete { _ in connections.remove(key) }
                return channel.eventLoop.makeCompletedFuture {
                    try addSecurity(channel, peer)
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: .milliseconds(idle.milliseconds)))
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder(maxBytes: maxLine)))
                    try channel.pipeline.syncOperations.addHandler(ReceiverHandler(
                        deliverer: deliverer, token: token, maxLineBytes: maxLine, peer: peer, refusals: refusals,
                        helloDeadline: helloDeadline, proved: { connections.proved(key) }))
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
/// how many each peer address has, proved or not.
private final class OpenConnections: Sendable {
    private struct Entry {
        let channel: any Channel
        let peer: String
        let order: Int
        var proved = false
    }
    private struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        var perPeer: [String: Int] = [:]
        var unproved: [String: Int] = [:]
        var accepted = 0
    }
    private let state = Mutex(State())

    /// Adds a connection, or says why not (too many from `peer`, or in all with
    /// no address holding more unproved ones than `peer` would); `evicted`, the
    /// unproved connection whose place it takes, already forgotten: close it.
    func add(_ channel: any Channel, _ key: ObjectIdentifier, peer: String) -> (refusal: String?, evicted: (channel: any Channel, peer: String)?) {
        state.withLock { s in
            if s.perPeer[peer, default: 0] >= TCPListener.maxPerPeer {
                return ("it has \(TCPListener.maxPerPeer) connections open, the most one address may have", nil)
            }
            let mine = s.unproved[peer, default: 0]
            if mine >= TCPListener.maxUnprovedPerPeer {
                return ("it has \(TCPListener.maxUnprovedPerPeer) connections that have sent nothing yet, the most one address may have", nil)
            }
            var evicted: (channel: any Channel, peer: String)?
            if s.entries.count >= TCPListener.maxConnections {
                guard let most = s.unproved.max(by: { $0.value < $1.value }), most.value >= mine + 2,
                      let oldest = s.entries.filter({ !$0.value.proved && $0.value.peer == most.key }).min(by: { $0.value.order < $1.value.order }) else {
                    return ("\(TCPListener.maxConnections) connections are open, the most this listener keeps", nil)
                }
                Self.forget(oldest.key, in: &s)
                evicted = (oldest.value.channel, oldest.value.peer)
            }
            s.accepted += 1
            s.entries[key] = Entry(channel: channel, peer: peer, order: s.accepted)
            s.perPeer[peer, default: 0] += 1
            s.unproved[peer, default: 0] += 1
            return (nil, evicted)
        }
    }

    /// The connection has proved itself: its place is no longer taken for a newcomer.
    func proved(_ key: ObjectIdentifier) {
        state.withLock { s in
            guard let entry = s.entries[key], !entry.proved else { return }
            s.entries[key]?.proved = true
            Self.drop(entry.peer, from: &s.unproved)
        }
    }

    func remove(_ key: ObjectIdentifier) {
        state.withLock { s in Self.forget(key, in: &s) }
    }

    private static func forget(_ key: ObjectIdentifier, in s: inout State) {
        guard let entry = s.entries.removeValue(forKey: key) else { return }
        drop(entry.peer, from: &s.perPeer)
        if !entry.proved { drop(entry.peer, from: &s.unproved) }
    }

    private static func drop(_ peer: String, from counts: inout [String: Int]) {
        counts[peer, default: 1] -= 1
        if counts[peer] == 0 { counts[peer] = nil }
    }

    var all: [any Channel] { state.withLock { $0.entries.values.map(\.channel) } }

    /// Open now, and accepted since the start.
    var counts: (open: Int, accepted: Int) { state.withLock { ($0.entries.count, $0.accepted) } }
}
