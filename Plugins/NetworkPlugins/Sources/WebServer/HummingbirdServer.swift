import Dispatch
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import MsgKit
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization
import TLSCommon

/// `http://HOST:PORT` and `https://HOST:PORT?cert=FILE&key=FILE[&client_ca=FILE]`:
/// Hummingbird serving the host's pages (``WebServerContext/respond``). The host's
/// answer may block on the store, so it runs on a thread pool of its own, never on
/// an event loop: a slow page holds no connection but its own. Each connection is
/// closed after ``WebServerContext/idleTimeout`` of silence, and past
/// ``WebServerContext/maxConnections`` new ones wait in the accept queue.
final class HummingbirdServer: WebServer, @unchecked Sendable {
    static let parameters = ["cert", "key", "client_ca"]
    /// Connections the kernel keeps waiting to be accepted: a burst of hundreds
    /// (idle ones among them) must not overflow it, or a good client's SYN is
    /// dropped and it waits a second to send it again.
    static let backlog = 4096

    private let url: PluginURL
    private let host: String
    private let port: Int
    private let tls: TLSConfiguration?
    private let context: WebServerContext
    private let pool = NIOThreadPool(numberOfThreads: 2)
    private let running = Mutex<(group: ServiceGroup, done: DispatchSemaphoreBox)?>(nil)

    /// - Throws: `config` for a URL that is not `http://HOST:PORT` or a TLS file that does not read.
    init(_ url: PluginURL, context: WebServerContext) throws(MsgError) {
        guard let authority = url.authority, let colon = authority.lastIndex(of: ":"),
              let port = Int(authority[authority.index(after: colon)...]), (0...65535).contains(port), url.path.isEmpty || url.path == "/" else {
            throw MsgError(.config, "\(url): expected \(url.scheme)://HOST:PORT, such as \(url.scheme)://127.0.0.1:8025")
        }
        var host = String(authority[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.isEmpty { host = "127.0.0.1" }
        for p in url.parameters where url.scheme == "http" || !Self.parameters.contains(p.name) {
            throw MsgError(.config, "\(url): unknown parameter \(p.name)=" + (url.scheme == "http" ? " (TLS files need https://)" : ""))
        }
        if url.scheme == "https" {
            guard let cert = url.parameter("cert"), let key = url.parameter("key") else {
                throw MsgError(.config, "\(url): https:// needs its certificate and key: cert=FILE&key=FILE")
            }
            let configuration = try TLSSetup.server(cert: ("cert", cert), key: ("key", key), clientCA: url.parameter("client_ca").map { ("client_ca", $0) })
            _ = try TLSSetup.context(configuration, display: url.text)
            tls = configuration
        } else {
            tls = nil
        }
        (self.url, self.host, self.port, self.context) = (url, host, port, context)
    }

    func start() throws(MsgError) -> String {
        pool.start()
        let bound = Mutex<Result<String, MsgError>?>(nil)
        let ready = DispatchSemaphoreBox()
        let (scheme, host, respond, limit) = (url.scheme, host, context.respond, context.maxBodyBytes)
        let pool = self.pool
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            try await Self.answer(request, limit: limit, pool: pool, respond: respond)
        }
        let http1 = HTTPServerBuilder.http1(configuration: .init(idleTimeout: .milliseconds(context.idleTimeout.milliseconds)))
        let server: HTTPServerBuilder
        do {
            server = try tls.map { try HTTPServerBuilder.tls(http1, tlsConfiguration: $0) } ?? http1
        } catch {
            throw MsgError(.config, "\(url): the TLS settings do not load: \(TLSReason.short(error))")
        }
        var logger = Logger(label: "msg.web")
        logger.logLevel = .critical
        let app = Application(
            responder: responder, server: server,
            configuration: .init(address: .hostname(host, port: port), serverName: "msg", backlog: Self.backlog,
                                 availableConnectionsDelegate: MaximumAvailableConnections(context.maxConnections)),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                let shown = host.contains(":") ? "[\(host)]" : host
                bound.withLock { $0 = .success("\(scheme)://\(shown):\(port)") }
                ready.signal()
            },
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        let done = DispatchSemaphoreBox()
        let display = url.text
        Task.detached {
            do { try await group.run() } catch {
                bound.withLock { $0 = $0 ?? .failure(MsgError(.unavailable, "\(display): cannot listen (\(error))")) }
            }
            ready.signal()
            done.signal()
        }
        ready.wait()
        let result = bound.withLock { $0 } ?? .failure(MsgError(.unavailable, "\(display): the server stopped before it listened"))
        switch result {
        case .success(let address):
            running.withLock { $0 = (group, done) }
            return address
        case .failure(let error):
            try? pool.syncShutdownGracefully()
            throw error
        }
    }

    func stop() {
        guard let (group, done) = running.withLock({ r in defer { r = nil }; return r }) else { return }
        Task.detached { await group.triggerGracefulShutdown() }
        done.wait()
        try? pool.syncShutdownGracefully()
    }

    /// The host's answer to `request`, asked on the pool.
    private static func answer(_ request: Request, limit: Int, pool: NIOThreadPool,
                               respond: @escaping @Sendable (WebRequest) -> WebResponse) async throws -> Response {
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: limit)
        } catch {
            return Response(status: .contentTooLarge, headers: [.contentType: "text/plain; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(string: "msg: a request body is at most \(limit) bytes\n")))
        }
        var headers: [WebHeader] = []
        // HTTP/1.1's Host is the request's authority here, not one of its fields.
        if let authority = request.head.authority { headers.append(WebHeader("host", authority)) }
        for field in request.headers { headers.append(WebHeader(field.name.canonicalName, field.value)) }
        let asked = WebRequest(method: request.method.rawValue, path: request.uri.path, query: request.uri.query ?? "",
                               headers: headers, body: Array(buffer: body))
        let answer = try await pool.runIfActive { respond(asked) }
        var fields = HTTPFields()
        for h in answer.headers {
            if let name = HTTPField.Name(h.name) { fields.append(HTTPField(name: name, value: h.value)) }
        }
        return Response(status: .init(code: answer.status), headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }
}

/// A semaphore that crosses into a task.
final class DispatchSemaphoreBox: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    func signal() { semaphore.signal() }
    func wait() { semaphore.wait() }
}
