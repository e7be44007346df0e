import MsgKit
import NIOCore
import NIOSSL
import NIOTLS
import Synchronization
import TCPWire
import TLSCommon

/// The sender's side of `tls://HOST:PORT?ca=FILE&cert=FILE&key=FILE&server_name=NAME`:
/// TLS 1.2 or 1.3 under msg's protocol, the receiver's certificate verified against
/// the system's roots or `ca=`, and its name against `server_name=` or the host
/// (an address is checked against the certificate's IP addresses); a client
/// certificate presented with `cert=` and `key=`. Nothing is sent to a receiver
/// that does not verify.
struct TLSClientWire: WireSecurity {
    static let parameters = ["ca", "cert", "key", "server_name"]

    let context: NIOSSLContext
    let configuration: TLSConfiguration
    let serverName: String?

    /// - Throws: `config` for a file that does not read, or a certificate without its key.
    init(_ address: TCPAddress) throws(MsgError) {
        let tls = try TLSSetup.client(TLSSetup.Files(ca: address.extra["ca"].map { ("ca", $0) }, cert: address.extra["cert"].map { ("cert", $0) },
                                                     key: address.extra["key"].map { ("key", $0) }), display: address.display)
        configuration = tls
        context = try TLSSetup.context(tls, display: address.display)
        // SNI and the name checked: the host, unless it is an address (then the
        // certificate must name that address) or server_name= says otherwise.
        serverName = address.extra["server_name"] ?? (TLSReason.isAddress(address.host) ? nil : address.host)
    }

    var scheme: String { "tls" }
    var authenticatesClients: Bool { false }

    func addClientHandlers(to channel: any Channel, address: TCPAddress) throws {
        try channel.pipeline.syncOperations.addHandlers(CertificateNames.clientHandlers(context, name: serverName))
    }

    func addServerHandlers(to channel: any Channel, guard: WireGuard, refuse: @escaping @Sendable (String) -> Void) throws {}

    func explain(_ error: any Error, address: TCPAddress) -> MsgError? {
        TLSReason.explain(error, display: address.display, name: serverName ?? address.host) { () -> NIOSSLCertificate? in
            TLSProbe.peerCertificate(host: address.host, port: address.port, configuration: configuration, serverName: serverName)
        }
    }

    /// A sender listens nowhere: these are the listener's (``TLSServerWire``).
    var otherWireFirstByte: UInt8 { 0x7B }
    var otherWireRefusal: String { "" }
}

/// The listener's side of `tls://HOST:PORT?cert=FILE&key=FILE&client_ca=FILE`: its
/// certificate and key, read again on SIGHUP (``reload()``); with `client_ca=`,
/// every sender must present a certificate that CA signed (mutual TLS), which then
/// authenticates it as a token would.
final class TLSServerWire: ReloadableWireSecurity {
    static let parameters = ["cert", "key", "client_ca"]

    private let files: (cert: String, key: String, clientCA: String?)
    /// The listener's address as msg says it: its port once bound (``listening(at:)``).
    private let shown: Mutex<String>
    private var display: String { shown.withLock { $0 } }
    private let current: Mutex<NIOSSLContext>

    /// - Throws: `config` without `cert=` and `key=`, or for a file that does not read.
    init(_ address: TCPAddress) throws(MsgError) {
        guard let cert = address.extra["cert"], let key = address.extra["key"] else {
            throw MsgError(.config, "\(address.display): msg listen over TLS needs its certificate and key: cert=FILE&key=FILE")
        }
        files = (cert, key, address.extra["client_ca"])
        shown = Mutex(address.display)
        current = Mutex(try Self.context(files, display: address.display))
    }

    func listening(at display: String) {
        shown.withLock { $0 = display }
    }

    private static func context(_ files: (cert: String, key: String, clientCA: String?), display: String) throws(MsgError) -> NIOSSLContext {
        let tls = try TLSSetup.server(cert: ("cert", files.cert), key: ("key", files.key), clientCA: files.clientCA.map { ("client_ca", $0) })
        return try TLSSetup.context(tls, display: display)
    }

    var scheme: String { "tls" }
    var authenticatesClients: Bool { files.clientCA != nil }

    func reload() throws(MsgError) -> String {
        let fresh = try Self.context(files, display: display)
        current.withLock { $0 = fresh }
        return "the certificate and key (\(files.cert), \(files.key))" + (files.clientCA.map { " and the client CAs (\($0))" } ?? "")
    }

    func addClientHandlers(to channel: any Channel, address: TCPAddress) throws {}

    func addServerHandlers(to channel: any Channel, guard: WireGuard, refuse: @escaping @Sendable (String) -> Void) throws {
        let context = current.withLock { $0 }
        try channel.pipeline.syncOperations.addHandler(`guard`)
        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
        try channel.pipeline.syncOperations.addHandler(HandshakeRefusals(refuse))
    }

    func explain(_ error: any Error, address: TCPAddress) -> MsgError? { nil }

    /// `{`: msg's protocol in clear text, from a tcp:// sender.
    var otherWireFirstByte: UInt8 { 0x7B }
    var otherWireRefusal: String {
        "this receiver speaks TLS; send with tls:// (a tcp:// sender connected to \(display))"
    }
}

/// After a listener's TLS handler: a handshake that fails (no client certificate,
/// one no trusted CA signed, no TLS version in common) is reported as a refused
/// connection, once, and the connection closed.
private final class HandshakeRefusals: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let refuse: @Sendable (String) -> Void
    private var done = false

    init(_ refuse: @escaping @Sendable (String) -> Void) { self.refuse = refuse }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let e = event as? TLSUserEvent, case .handshakeCompleted = e { done = true }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !done, error is NIOSSLError || error is BoringSSLError {
            done = true
            let code = TLSReason.code(error)
            refuse(code == "EOF during handshake" ? "the client ended the TLS handshake (does it trust this certificate? its ca= must)"
                   : "TLS handshake failed: \(code ?? TLSReason.short(error))")
            context.close(promise: nil)
            return
        }
        context.fireErrorCaught(error)
    }
}
