import MsgKit
import NIOSSL

/// The one place msg's TLS configurations are made (tls:// senders and `msg
/// listen`, smtp://, https://), so a rule fixed once holds everywhere: TLS 1.2 or
/// 1.3, the chain always verified (a client's roots: the system's, or the CAs of
/// one file), a certificate and its key from owner-only files read by
/// ``TLSFiles``, and names checked by ``CertificateNames``, never by anything a
/// certificate prints. (The postgres:// store keeps libpq's `sslmode` meanings,
/// whose `prefer` and `require` do not verify, in its own.)
public enum TLSSetup {
    /// The files of one side: `(parameter name, path)` pairs, as the URL names them.
    public struct Files: Sendable {
        public var ca: (parameter: String, path: String)?
        public var cert: (parameter: String, path: String)?
        public var key: (parameter: String, path: String)?
        public init(ca: (String, String)? = nil, cert: (String, String)? = nil, key: (String, String)? = nil) {
            self.ca = ca.map { (parameter: $0.0, path: $0.1) }
            self.cert = cert.map { (parameter: $0.0, path: $0.1) }
            self.key = key.map { (parameter: $0.0, path: $0.1) }
        }
    }

    /// A client's configuration: the chain verified against `files.ca` (else the
    /// system's roots), a client certificate when both `cert` and `key` are given.
    /// - Throws: `config`, with `display` first, for a file that does not read or
    ///   a certificate without its key.
    public static func client(_ files: Files, display: String) throws(MsgError) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        tls.certificateVerification = .fullVerification
        if let ca = files.ca { tls.trustRoots = .certificates(try TLSFiles.certificates(ca.path, parameter: ca.parameter)) }
        switch (files.cert, files.key) {
        case (let cert?, let key?):
            tls.certificateChain = try TLSFiles.certificates(cert.path, parameter: cert.parameter).map { .certificate($0) }
            tls.privateKey = .privateKey(try TLSFiles.key(key.path, parameter: key.parameter))
        case (nil, nil): break
        case (let cert, let key):
            throw MsgError(.config, "\(display): a client certificate needs both \(cert?.parameter ?? "cert")= and \(key?.parameter ?? "key")=")
        }
        return tls
    }

    /// A server's configuration: its chain and key; with `clientCA`, every client
    /// must present a certificate those CAs signed (mutual TLS; no name to check).
    public static func server(cert: (parameter: String, path: String), key: (parameter: String, path: String),
                              clientCA: (parameter: String, path: String)?) throws(MsgError) -> TLSConfiguration {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try TLSFiles.certificates(cert.path, parameter: cert.parameter).map { .certificate($0) },
            privateKey: .privateKey(try TLSFiles.key(key.path, parameter: key.parameter)))
        tls.minimumTLSVersion = .tlsv12
        if let clientCA {
            tls.certificateVerification = .noHostnameVerification
            tls.trustRoots = .certificates(try TLSFiles.certificates(clientCA.path, parameter: clientCA.parameter))
            tls.sendCANameList = true
        }
        return tls
    }

    /// The context of `configuration`. - Throws: `config`, with `display` first.
    public static func context(_ configuration: TLSConfiguration, display: String) throws(MsgError) -> NIOSSLContext {
        do { return try NIOSSLContext(configuration: configuration) } catch {
            throw MsgError(.config, "\(display): the TLS settings do not load: \(TLSReason.short(error)) (does the key belong to the certificate?)")
        }
    }
}
