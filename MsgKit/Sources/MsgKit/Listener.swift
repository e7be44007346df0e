/// Receives records from other hosts and delivers them into a local transport
/// (`msg listen tcp://HOST:PORT --into file:DIR`, docs/DESIGN.md 5).
///
/// ## Implementation requirements
/// 1. **Acknowledge only what is durable.** A record is acked positively only after
///    the sink transport reported it delivered; a sender that saw the ack may forget it.
/// 2. **Deduplicate by id**, through the sink: an id already delivered is acked
///    without a second delivery.
/// 3. **Bounded by design.** A hostile peer (an endless line, garbage, a stalled
///    reader, connections opened and left idle) gets a negative ack or is
///    disconnected; memory and descriptors stay bounded, and refusals are reported.
/// 5. **Say who can reach it.** A listener other hosts can reach says so; without
///    a token it refuses to start unless ``ListenerContext/openWithoutToken``.
/// 4. **Stop cleanly.** ``stop()`` stops accepting, lets deliveries already handed to
///    the sink finish and their acks go out, then closes every connection.
public protocol Listener: AnyObject {
    /// Starts accepting connections.
    /// - Returns: the address actually bound, as a URL (`tcp://127.0.0.1:43121` for port 0).
    /// - Throws: `unavailable` when the address cannot be bound.
    func start() throws(MsgError) -> String

    /// Stops accepting and closes every connection after the acks in flight; blocks until done.
    func stop()

    /// Its connection counts, or nil when it keeps none (`msg listen --metrics`).
    var connectionCounts: (any ListenerStatistics)? { get }

    /// What reads its files again on SIGHUP, or nil when it has none to read.
    var reloading: (any ListenerReloading)? { get }
}

extension Listener {
    public var connectionCounts: (any ListenerStatistics)? { nil }
    public var reloading: (any ListenerReloading)? { nil }
}

/// What a listener needs from the host besides its own URL.
public struct ListenerContext {
    /// Where received records are delivered. Only one thread at a time may use it.
    public var sink: any Transport
    /// The sink's URL, as the user named it (for what the listener says).
    public var sinkName: String
    /// Whether the user allowed a listener that other hosts can reach to take
    /// records without a token (`msg listen --no-token`). Without it such a listener
    /// refuses to start.
    public var openWithoutToken: Bool
    /// The longest line accepted, in bytes; longer ones get a negative ack.
    public var maxLineBytes: Int
    /// The deadline of each delivery into the sink.
    public var deadline: MsgDuration
    /// Where the listener reports what a user should see (one line each, no newline).
    public var report: @Sendable (String) -> Void

    /// A context delivering into `sink`, named `sinkName`.
    public init(sink: any Transport, sinkName: String = "the sink", openWithoutToken: Bool = false,
                maxLineBytes: Int = RecordLimits.maxDeliveredBytes, deadline: MsgDuration = .seconds(3),
                report: @escaping @Sendable (String) -> Void) {
        self.sink = sink
        self.sinkName = sinkName
        self.openWithoutToken = openWithoutToken
        self.maxLineBytes = maxLineBytes
        self.deadline = deadline
        self.report = report
    }
}

/// What a listener can tell about its connections (``Listener/connectionCounts``):
/// `msg listen --metrics` serves them.
public protocol ListenerStatistics: AnyObject {
    /// The counts now; safe to call from any thread.
    func statistics() -> ListenerCounts
}

/// A listener's connection counts since it started.
public struct ListenerCounts: Sendable, Equatable {
    /// Connections open now.
    public var open: Int
    /// Connections accepted.
    public var accepted: Int
    /// Connections refused (too many, a bad or missing token, too slow to say hello).
    public var refused: Int

    public init(open: Int, accepted: Int, refused: Int) {
        self.open = open
        self.accepted = accepted
        self.refused = refused
    }
}

/// What reads a listener's files again while it runs (``Listener/reloading``):
/// `msg listen` calls ``reload()`` on SIGHUP, so a certificate rotated on disk
/// (certbot and the like) is taken up without dropping a connection.
public protocol ListenerReloading: AnyObject {
    /// Reads the files again: connections made from now on use them, those open
    /// are kept as they are. Called from the host's main thread.
    /// - Returns: what was read, in a few words, or nil when there is nothing to read.
    /// - Throws: `config` when the files do not read; the listener keeps what it had.
    func reload() throws(MsgError) -> String?
}
