import NIOSSL

/// Whether a certificate is for a host name: one of its DNS names (subjectAltName,
/// read from the parsed certificate) is the name, or a wildcard (`*.example.com`)
/// for one label of it (RFC 6125). Nothing else makes it so: not an IP address it
/// names (that matches only an address the user named, which swift-nio-ssl checks
/// against the address connected to), and not its subject's common name, which the
/// CA/Browser Forum retired and which is never read from a certificate's printed
/// description (a subject of `CN=evil.example;common_name=localhost` once passed
/// for localhost that way). A certificate with no DNS name is for no name.
public enum CertificateNames {
    public static func names(_ certificate: NIOSSLCertificate, _ host: String) -> Bool {
        let wanted = host.lowercased().trimmingSuffix(".")
        guard !wanted.isEmpty else { return false }
        for name in certificate._subjectAlternativeNames() where name.nameType == .dnsName {
            let bytes = Array(name.contents)
            // An IA5String: a NUL or anything past ASCII is no host name.
            guard !bytes.isEmpty, bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { continue }
            if matches(String(decoding: bytes, as: UTF8.self).lowercased().trimmingSuffix("."), wanted) { return true }
        }
        return false
    }

    public static func matches(_ pattern: String, _ host: String) -> Bool {
        if pattern == host { return true }
        // A wildcard stands for one whole label, left-most, under at least two more (`*.com` is for no host).
        guard pattern.hasPrefix("*."), pattern.dropFirst(2).contains("."), let dot = host.firstIndex(of: ".") else { return false }
        let first = host[..<dot]
        return !first.isEmpty && pattern.dropFirst(1) == host[dot...]
    }
}

private extension String {
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}

extension CertificateNames {
    /// A client's TLS handler for a server that must be `name` (nil: an address,
    /// checked by swift-nio-ssl against the certificate's IP addresses). A name is
    /// checked again, strictly, before the handshake completes and anything is
    /// sent: swift-nio-ssl also accepts a certificate that names the address
    /// connected to instead. (An underscored API: the one hook that runs there.)
    public static func clientHandler(_ context: NIOSSLContext, name: String?) throws -> NIOSSLClientHandler {
        guard let name else { return try NIOSSLClientHandler(context: context, serverHostname: nil) }
        return try NIOSSLClientHandler._makeSSLClientHandler(
            context: context, serverHostname: name,
            additionalPeerCertificateVerificationCallback: { certificate, channel in
                names(certificate, name)
                    ? channel.eventLoop.makeSucceededVoidFuture()
                    : channel.eventLoop.makeFailedFuture(NIOSSLExtraError.failedToValidateHostname)
            })
    }
}
