import NIOSSL

/// Whether a certificate is for a host name: one of its DNS names is the name, or a
/// wildcard (`*.example.com`) for one label of it (RFC 6125); with no DNS name at
/// all, its common name is.
public enum CertificateNames {
    public static func names(_ certificate: NIOSSLCertificate, _ host: String) -> Bool {
        let wanted = host.lowercased().trimmingSuffix(".")
        var dnsNames: [String] = []
        for name in certificate._subjectAlternativeNames() where name.nameType == .dnsName {
            dnsNames.append(String(decoding: Array(name.contents), as: UTF8.self).lowercased())
        }
        if dnsNames.isEmpty {
            // Only a certificate with no DNS name is read by its subject's CN.
            // (Its description is the one public reader of the CN: `;common_name=NAME`.)
            let text = certificate.description.lowercased()
            return text.contains(";common_name=\(wanted);") || text.contains(";common_name=\(wanted)>")
        }
        return dnsNames.contains { matches($0.trimmingSuffix("."), wanted) }
    }

    public static func matches(_ pattern: String, _ host: String) -> Bool {
        if pattern == host { return true }
        guard pattern.hasPrefix("*."), let dot = host.firstIndex(of: ".") else { return false }
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
