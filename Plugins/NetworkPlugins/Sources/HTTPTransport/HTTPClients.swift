import AsyncHTTPClient
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import TLSCommon

/// The transport's AsyncHTTPClients, made on first use, one per connect timeout
/// and host: the connect timeout is the attempt's deadline, so a host that never
/// answers a SYN holds the run no longer than the deadline; the host is the name
/// every connection of that client must be for. swift-nio-ssl verifies the chain
/// (`.fullVerification`) but also takes a certificate that names only the address
/// connected to; each new connection is then checked as tls:// checks one
/// (``CertificateNames``: DNS names for a host name, never the subject), through
/// AsyncHTTPClient's door for it, which runs after the handshake and before the
/// pool puts a request on the connection. A certificate for another name closes
/// the connection and fails the request with ``NameMismatch``: nothing of it
/// reached the server.
final class HTTPClients: Sendable {
    private let made = NIOLockedValueBox([String: HTTPClient]())
    private let tls: TLSConfiguration
    private let concurrency: Int

    init(tls: TLSConfiguration, concurrency: Int) {
        self.tls = tls
        self.concurrency = concurrency
    }

    func client(connectTimeout milliseconds: Int64, host: String) -> HTTPClient {
        let name = host.lowercased()
        return made.withLockedValue { made in
            let key = "\(milliseconds) \(name)"
            if let client = made[key] { return client }
            // Redirects are followed by the transport, not by the client (``Redirect``).
            var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow,
                                                         timeout: .init(connect: .milliseconds(milliseconds)))
            configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: concurrency)
            // A destination that refuses connections is unreachable now; fail at once
            // instead of retrying until the deadline.
            configuration.connectionPool.retryConnectionEstablishment = false
            // An address is checked by swift-nio-ssl against the certificate's IP addresses.
            if !TLSReason.isAddress(name.hasPrefix("[") ? String(name.dropFirst().dropLast()) : name) {
                configuration.http1_1ConnectionDebugInitializer = Self.nameCheck(name)
                configuration.http2ConnectionDebugInitializer = Self.nameCheck(name)
            }
            let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
            made[key] = client
            return client
        }
    }

    /// Fails a TLS connection whose verified certificate is not for `name`, and
    /// closes it (AsyncHTTPClient does not); a connection without TLS (http://)
    /// has nothing to check.
    static func nameCheck(_ name: String) -> @Sendable (any Channel) -> EventLoopFuture<Void> {
        { channel in
            channel.eventLoop.submit {
                let pipeline = channel.pipeline.syncOperations
                guard (try? pipeline.handler(type: NIOSSLClientHandler.self)) != nil else { return }
                if let mismatch = CertificateNames.mismatch(try pipeline.nioSSL_peerCertificate(), name) {
                    channel.close(promise: nil)
                    throw mismatch
                }
            }
        }
    }

    func shutdown() {
        for client in made.withLockedValue({ Array($0.values) }) { try? client.syncShutdown() }
    }
}
