import Synchronization

/// A request to the host's web pages (`msg web`, `--metrics`; ABI 9.5): what a
/// web server plugin read off the connection, whole.
public struct WebRequest: Sendable {
    /// `GET`, `POST`…
    public var method: String
    /// The path, percent-encoded as sent, without the query.
    public var path: String
    /// The query after `?`, as sent (empty when none).
    public var query: String
    /// The header fields, names in lower case, in the order sent.
    public var headers: [WebHeader]
    /// The body (at most ``WebServerContext/maxBodyBytes``).
    public var body: [UInt8]

    public init(method: String, path: String, query: String = "", headers: [WebHeader] = [], body: [UInt8] = []) {
        (self.method, self.path, self.query, self.headers, self.body) = (method, path, query, headers, body)
    }

    /// The first value of the header field `name` (lower case), or nil.
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// One header field of a ``WebRequest`` or ``WebResponse``.
public struct WebHeader: Sendable, Equatable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) { (self.name, self.value) = (name, value) }
}

/// The host's answer to a ``WebRequest``.
public struct WebResponse: Sendable {
    /// The status code (200, 404…).
    public var status: Int
    /// Header fields besides Content-Length, which the server sets.
    public var headers: [WebHeader]
    public var body: [UInt8]

    public init(status: Int, headers: [WebHeader] = [], body: [UInt8] = []) {
        (self.status, self.headers, self.body) = (status, headers, body)
    }
}

/// What a web server needs from the host besides its own URL.
public struct WebServerContext: Sendable {
    /// Answers one request. It may block (it reads the store): the server calls it
    /// off its event loops, so a slow answer holds no other connection.
    public var respond: @Sendable (WebRequest) -> WebResponse
    /// The largest request body read; past it the answer is 413 and the host is not asked.
    public var maxBodyBytes: Int
    /// How long a connection may stay silent before it is closed.
    public var idleTimeout: MsgDuration
    /// Connections served at once; past it new ones wait in the accept queue.
    public var maxConnections: Int

    public init(respond: @escaping @Sendable (WebRequest) -> WebResponse, maxBodyBytes: Int = 64 * 1024,
                idleTimeout: MsgDuration = .seconds(30), maxConnections: Int = 512) {
        (self.respond, self.maxBodyBytes) = (respond, maxBodyBytes)
        (self.idleTimeout, self.maxConnections) = (idleTimeout, maxConnections)
    }
}

/// An HTTP server a plugin runs for the host (`http://HOST:PORT`, `https://…`).
///
/// ## Implementation requirements
/// 1. **Bounded.** A slow or idle client cannot hold the others: every connection
///    has ``WebServerContext/idleTimeout``, request heads and bodies have limits.
/// 2. **The host decides.** Every request that parses goes to
///    ``WebServerContext/respond``; the server adds nothing but what HTTP needs.
/// 3. **Client certificates** (`https://…?client_ca=FILE`): a client without a
///    certificate those CAs signed does not get past the handshake.
public protocol WebServer: AnyObject {
    /// Starts listening.
    /// - Returns: the address bound, as a URL (`http://127.0.0.1:43121` for port 0).
    /// - Throws: `unavailable` when the address cannot be bound, `config` for a bad URL.
    func start() throws(MsgError) -> String

    /// Stops listening and closes every connection; blocks until done.
    func stop()
}

/// The web server factories plugins registered, by scheme (ABI 9.5). Apart from
/// ``PluginRegistry`` so that the registry's layout stays as ABI 9 recorded it.
public enum WebServers {
    /// Makes a web server for a URL. - Throws: `MsgError` (`config`, `unavailable`…).
    public typealias Factory = @Sendable (PluginURL, WebServerContext) throws(MsgError) -> any WebServer

    /// One registered scheme: the plugin's name, version and file (as `msg plugins` tells).
    public struct Entry: Sendable {
        public let scheme: String
        public let plugin: String
        public let version: String
        public let path: String
        let factory: Factory
    }

    private static let table = Mutex<[String: Entry]>([:])

    /// The factory for `scheme`, or nil.
    public static func factory(_ scheme: String) -> Factory? {
        table.withLock { $0[scheme]?.factory }
    }

    /// Every registered scheme, sorted.
    public static func entries() -> [Entry] {
        table.withLock { t in t.values.sorted { $0.scheme < $1.scheme } }
    }

    static func add(_ entry: Entry) {
        table.withLock { $0[entry.scheme] = entry }
    }
}

extension PluginRegistrar {
    /// Registers a web server factory for `scheme` (what `msg web --listen SCHEME://…`
    /// and `--metrics` run; ABI 9.5).
    public func webServer(scheme: String, _ factory: @escaping WebServers.Factory) {
        WebServers.add(WebServers.Entry(scheme: scheme, plugin: plugin, version: version, path: path, factory: factory))
    }
}
