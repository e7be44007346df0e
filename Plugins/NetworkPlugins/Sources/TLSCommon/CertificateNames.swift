import NIOCore
import NIOSSL
import NIOTLS
import X509

/// Whether a certificate is for a host name: one of its DNS names (subjectAltName,
/// read from the parsed certificate by swift-certificates) is the name, or a
/// wildcard (`*.example.com`) for one label of it (RFC 6125). Nothing else makes
/// it so: not an IP address it names (that matches only an address the user
/// named, which swift-nio-ssl checks against the address connected to), and not
/// its subject's common name, which the CA/Browser Forum retired and which is never
/// read from a certificate's printed description (a subject of
/// `CN=evil.example;common_name=localhost` once passed for localhost that way).
/// A certificate with no DNS name is for no name.
public enum CertificateNames {
    public static func names(_ certificate: NIOSSLCertificate, _ host: String) -> Bool {
        let wanted = host.lowercased().trimmingSuffix(".")
        guard !wanted.isEmpty, let alternatives = alternatives(certificate) else { return false }
        for case .dnsName(let name) in alternatives {
            // An IA5String: a NUL or anything past ASCII is no host name.
            guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { continue }
            if matches(name.lowercased().trimmingSuffix("."), wanted) { return true }
        }
        return false
    }

    /// The names a certificate has, as openssl prints them (`DNS:mail.example`,
    /// `IP:127.0.0.1`), for an error that says why it is not for a host.
    public static func listed(_ certificate: NIOSSLCertificate) -> [String] {
        guard let alternatives = alternatives(certificate) else { return [] }
        return alternatives.compactMap { name -> String? in
            switch name {
            case .dnsName(let dns): return "DNS:" + String(dns.unicodeScalars.filter { $0.value > 0x20 && $0.value < 0x7F })
            case .ipAddress(let bytes): return "IP:" + address(Array(bytes.bytes))
            default: return nil
            }
        }
    }

    /// The certificate's subjectAltName, parsed from its DER by swift-certificates;
    /// nil when it has none or does not parse.
    private static func alternatives(_ certificate: NIOSSLCertificate) -> SubjectAlternativeNames? {
        guard let der = try? certificate.toDERBytes(), let parsed = try? Certificate(derEncoded: der) else { return nil }
        return try? parsed.extensions.subjectAlternativeNames
    }

    /// `127.0.0.1` or `::1` from an address's bytes.
    static func address(_ bytes: [UInt8]) -> String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        guard bytes.count == 16 else { return bytes.map { String($0, radix: 16) }.joined(separator: ":") }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }.joined(separator: ":")
    }

    /// Why `leaf` is not for `name`, or nil when it is: the one check of every
    /// client msg makes (tls://, smtp://, https://, postgres://).
    public static func mismatch(_ leaf: NIOSSLCertificate?, _ name: String) -> NameMismatch? {
        guard let leaf else { return NameMismatch(name: name, names: []) }
        return names(leaf, name) ? nil : NameMismatch(name: name, names: listed(leaf))
    }

    public static func matches(_ pattern: String, _ host: String) -> Bool {
        if pattern == host { return true }
        // A wildcard stands for one whole label, left-most, under at least two more (`*.com` is for no host).
        guard pattern.hasPrefix("*."), pattern.dropFirst(2).contains("."), let dot = host.firstIndex(of: ".") else { return false }
        let first = host[..<dot]
        return !first.isEmpty && pattern.dropFirst(1) == host[dot...]
    }
}

/// A verified certificate that is not for the name the client wanted: what the
/// user reads (TLSReason) names the host and the names the certificate has.
public struct NameMismatch: Error, Sendable, Equatable {
    public let name: String
    public let names: [String]

    /// `its certificate is not for localhost (it names IP:127.0.0.1)`.
    public var description: String {
        "its certificate is not for \(name) (" + (names.isEmpty ? "it names no host" : "it names " + names.joined(separator: ", ")) + ")"
    }
}

private extension String {
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}

extension CertificateNames {
    /// A client's TLS handlers for a server that must be `name` (nil: an address,
    /// checked by swift-nio-ssl against the certificate's IP addresses), network
    /// side first: swift-nio-ssl's, which verifies the chain (and, less strictly,
    /// the name: it also takes a certificate that names the address connected
    /// to), then a ``NameGate`` that holds every write and read until the
    /// handshake is done and the certificate is for `name`.
    public static func clientHandlers(_ context: NIOSSLContext, name: String?) throws -> [any ChannelHandler] {
        let tls = try NIOSSLClientHandler(context: context, serverHostname: name)
        guard let name else { return [tls] }
        return [tls, NameGate(name: name)]
    }
}

/// Lets nothing through, either way, until TLS's handshake is done and the peer's
/// certificate is for the name (``CertificateNames/names(_:_:)``): writes are held,
/// reads dropped. A certificate for another name closes the connection with a
/// ``NameMismatch``, the held writes failed: nothing the client wrote ever
/// reaches that server.
public final class NameGate: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = NIOAny
    public typealias InboundOut = NIOAny
    public typealias OutboundIn = NIOAny
    public typealias OutboundOut = NIOAny

    private let name: String
    private var open = false
    private var held: [(NIOAny, EventLoopPromise<Void>?)] = []
    private var flushHeld = false

    public init(name: String) { self.name = name }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard open else { return held.append((data, promise)) }
        context.write(data, promise: promise)
    }

    public func flush(context: ChannelHandlerContext) {
        guard open else { flushHeld = true; return }
        context.flush()
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard open else { return }
        context.fireChannelRead(data)
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard !open, case .handshakeCompleted? = event as? TLSUserEvent else {
            return context.fireUserInboundEventTriggered(event)
        }
        let leaf = try? context.pipeline.syncOperations.nioSSL_peerCertificate()
        if let error = CertificateNames.mismatch(leaf, name) {
            let writes = held
            held = []
            for (_, promise) in writes { promise?.fail(error) }
            context.fireErrorCaught(error)
            context.close(promise: nil)
            return
        }
        open = true
        let writes = held
        held = []
        for (data, promise) in writes { context.write(data, promise: promise) }
        if flushHeld { context.flush() }
        context.fireUserInboundEventTriggered(event)
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        for (_, promise) in held { promise?.fail(ChannelError.ioOnClosedChannel) }
        held = []
    }
}
