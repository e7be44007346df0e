import MsgKit
import NIOCore

/// What carries msg's protocol: the stream in clear text (`tcp://`, ``PlainWire``)
/// or TLS under it (`tls://`, in the network plugins' package, where swift-nio-ssl
/// is built). The sender and the listener are the same for both; a security adds
/// its handlers at the front of each connection's pipeline and words its own
/// failures.
public protocol WireSecurity: Sendable {
    /// The URL scheme, for what msg says (`tcp`, `tls`).
    var scheme: String { get }

    /// Whether the listener authenticates its clients itself (TLS with client
    /// certificates): then it needs no token to be reachable from other hosts.
    var authenticatesClients: Bool { get }

    /// Adds the handlers a sender's connection to `address` needs in front of the
    /// line framing. Runs on the channel's event loop.
    func addClientHandlers(to channel: any Channel, address: TCPAddress) throws

    /// Adds the handlers a listener's connection needs in front of the line
    /// framing, and `guard`'s refusal of a client that speaks the other wire;
    /// `refuse` reports a connection the security refused (a failed handshake),
    /// with the reason. Runs on the channel's event loop.
    func addServerHandlers(to channel: any Channel, guard: WireGuard, refuse: @escaping @Sendable (String) -> Void) throws

    /// A failure of a sender's connection (its handshake) in the security's own
    /// words, or nil when it is not one of its own. Called on the sender's thread.
    func explain(_ error: any Error, address: TCPAddress) -> MsgError?

    /// The first byte a client of the other wire sends (a TLS handshake record for
    /// a clear-text listener, `{` for a TLS one), so the listener can tell it so.
    var otherWireFirstByte: UInt8 { get }
    /// What the listener answers such a client, in clear text (a refusal of its
    /// hello, as msg's protocol words it, or bytes a TLS client reads as not TLS).
    var otherWireRefusal: String { get }

    /// The listener is bound, at `display` (the port it was given, or the one the
    /// system chose for port 0): what the security says from now on names it.
    func listening(at display: String)
}

extension WireSecurity {
    public func listening(at display: String) {}
}

/// The clear-text stream of `tcp://`.
public struct PlainWire: WireSecurity {
    public init() {}
    public var scheme: String { "tcp" }
    public var authenticatesClients: Bool { false }
    public func addClientHandlers(to channel: any Channel, address: TCPAddress) throws {}
    public func addServerHandlers(to channel: any Channel, guard: WireGuard, refuse: @escaping @Sendable (String) -> Void) throws {
        try channel.pipeline.syncOperations.addHandler(`guard`)
    }
    public func explain(_ error: any Error, address: TCPAddress) -> MsgError? { nil }
    /// A TLS record of the handshake.
    public var otherWireFirstByte: UInt8 { 0x16 }
    public var otherWireRefusal: String { "a TLS client (tls://) connected to a listener that speaks msg's protocol in clear text (tcp://)" }
}

/// A security whose files can be read again while a listener runs (`msg listen`
/// on SIGHUP): TLS's certificate and key, rotated by certbot and the like.
public protocol ReloadableWireSecurity: WireSecurity {
    /// Reads the files again; connections made from now on use them.
    /// - Returns: what was read, for the user.
    /// - Throws: `config` when they do not read: what was in use is kept.
    func reload() throws(MsgError) -> String
}
