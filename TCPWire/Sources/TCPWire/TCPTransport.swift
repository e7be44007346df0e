import MsgKit
import NIOCore
import NIOPosix

/// The `tcp://HOST:PORT` transport: sends records to a `msg listen` receiver over
/// the NDJSON protocol of msg-tcp(7), keeping up to `window` records in flight.
///
/// A record is delivered when the receiver acks it, which it does only after its
/// inbox made it durable. A lost connection or a missed deadline leaves the fate of
/// the records in flight unknown: they fail retryably, the receiver deduplicates a
/// resend by id, and ``lookup(_:)-(String)`` asks the receiver.
public final class TCPTransport: Transport {
    private let address: TCPAddress
    private let security: any WireSecurity
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private var connection: TCPConnection?
    /// When the connection was last handed out: one kept unused for ``reuseLimit``
    /// is made anew rather than raced against the receiver's idle limit (msg listen's
    /// `idle=`, 5 minutes by default), which could close it just as a record goes out.
    private var lastUsed = NIODeadline.now()
    /// How long an unused connection is kept.
    static let reuseLimit = TimeAmount.seconds(60)

    /// - Throws: `config` for a URL that is not `tcp://HOST:PORT`.
    public convenience init(url: PluginURL) throws(MsgError) {
        self.init(address: try TCPAddress(url, listening: false), security: PlainWire())
    }

    /// A sender to `address` over `security`'s stream.
    public init(address: TCPAddress, security: any WireSecurity) {
        self.address = address
        self.security = security
    }

    deinit {
        connection?.close()
        connection = nil
        try? group.syncShutdownGracefully()
    }

    public func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> [DeliveryOutcome] {
        var outcomes: [DeliveryOutcome] = []
        outcomes.reserveCapacity(records.count)
        let connection: TCPConnection
        do throws(MsgError) { connection = try connected() } catch {
            return records.map { _ in .failed(error, retryAfter: nil) }
        }
        var inFlight = CircularBuffer<EventLoopFuture<Wire.Answer>>()
        var next = 0
        var broken: MsgError?
        while outcomes.count < next || next < records.count && broken == nil {
            // Top the window up in chunks of half a window: one write and one event-loop
            // hop for many records.
            if broken == nil, next < records.count, inFlight.count <= address.window / 2 {
                let end = min(records.count, next + address.window - inFlight.count)
                inFlight.append(contentsOf: connection.send(records[next..<end].map(Self.line), deadline: deadline))
                next = end
            }
            guard let future = inFlight.popFirst() else { break }
            let m = records[outcomes.count].message
            do {
                let answer = try future.wait()
                guard case .ack(let id, let outcome) = answer, id == nil || id == m.id else {
                    throw MsgError(.remote, "\(address.display) answered out of order (expected an ack of \(m.id))")
                }
                outcomes.append(outcome)
            } catch {
                let e = error as? MsgError ?? MsgError(.unreachable, NIOErrorText.describe(error))
                outcomes.append(.failed(e, retryAfter: nil))
                if broken == nil {
                    // Answers can no longer be matched: closing fails the rest in flight at once.
                    broken = e
                    connection.close()
                }
            }
        }
        if let broken {
            self.connection = nil  // closed when it broke
            let notSent = MsgError(.unreachable, "not sent: \(broken.message)")
            while outcomes.count < records.count { outcomes.append(.failed(notSent, retryAfter: nil)) }
        }
        return outcomes
    }

    public func lookup(_ id: String) throws(MsgError) -> Bool? {
        try lookup([id])[0]
    }

    public func lookup(_ ids: [String]) throws(MsgError) -> [Bool?] {
        let connection = try connected()
        var answers: [Bool?] = []
        answers.reserveCapacity(ids.count)
        var inFlight = CircularBuffer<EventLoopFuture<Wire.Answer>>()
        var next = 0
        while answers.count < ids.count {
            if next < ids.count, inFlight.count <= address.window / 2 {
                let end = min(ids.count, next + address.window - inFlight.count)
                inFlight.append(contentsOf: connection.send(ids[next..<end].map { Wire.lookup(id: $0) }, deadline: address.connectTimeout))
                next = end
            }
            guard let future = inFlight.popFirst() else { break }
            do {
                switch try future.wait() {
                case .lookup(let id, let delivered) where id == ids[answers.count]: answers.append(delivered)
                case .ack(_, .failed(let e, _)): throw e
                default: throw MsgError(.remote, "\(address.display) answered a lookup out of order")
                }
            } catch {
                self.connection = nil
                connection.close()
                let e = error as? MsgError ?? MsgError(.unreachable, NIOErrorText.describe(error))
                throw MsgError(e.code.isDeliveryClass ? e.code : .unreachable, "lookup at \(address.display): \(e.message)")
            }
        }
        return answers
    }

    /// The open connection, made anew when there is none, when the receiver closed
    /// the one kept while nothing was being sent (a restart of `msg listen`), or when
    /// it has not been used for ``reuseLimit``: a record is never sent into a
    /// connection known to be closed.
    private func connected() throws(MsgError) -> TCPConnection {
        let now = NIODeadline.now()
        defer { lastUsed = now }
        if let connection, connection.isOpen, now - lastUsed < Self.reuseLimit { return connection }
        connection?.close()
        connection = nil
        let fresh = try TCPConnection(address, security: security, group: group)
        connection = fresh
        return fresh
    }

    private static func line(_ r: EncodedMessage) -> [UInt8] {
        var text = r.deliveredJSON
        text.append(UInt8(ascii: "\n"))
        return text
    }
}
