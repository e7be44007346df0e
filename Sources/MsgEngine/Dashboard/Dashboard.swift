import MsgKit
import MsgSupport
import Synchronization

/// `msg web`: the pages of a store (docs/DESIGN.md 6, msg-web(1)), answered for a
/// ``WebServer`` plugin. Everything a page shows comes from the store through one
/// handle, used by one request at a time; pages are kept for a second
/// (``PageCache``: half a page's refresh), so any number of browsers watching cost
/// one read every few seconds.
///
/// Safe by default: every string from a message is text (``HTML``); a Content
/// Security Policy forbids inline script and anything from elsewhere; with an
/// access token every request must carry it; actions exist only when allowed, and a
/// POST must carry the run's session token and come from the page's own origin.
public final class Dashboard: Sendable {
    /// What the operator chose.
    public struct Options: Sendable {
        /// Retry, hold, release, suspend and resume from the page (`--allow-actions`).
        public var allowActions = false
        /// The token every request must carry (`--token-file`), as a password of
        /// HTTP Basic authentication or a Bearer token.
        public var accessToken: String?
        /// Checkpoints the ledger page verifies against, with their key.
        public var checkpoints: [LedgerCheckpoint] = []
        /// Seconds between a page's updates of itself.
        public var refresh = 5
        /// The store's URL as shown (no credentials).
        public var storeName = ""
        /// Answer only requests whose Host is an address (`127.0.0.1:9470`, `[::1]:9470`)
        /// or `localhost`: with neither token nor client certificates, a name an
        /// attacker points at this machine (DNS rebinding) must not read the pages.
        public var addressedOnly = false
        public init() {}
    }

    let options: Options
    let store: StoreTurns
    /// Where a destination goes and with which policy (`msg route`), as one line,
    /// and its transport alone.
    let route: @Sendable (String) -> (line: String, transport: String)
    let reporter: Reporter
    /// The token a POST must carry: random, one per `msg web` run.
    let sessionToken: String
    let cache: PageCache
    let rates = RateHistory()
    let verification = Mutex<LedgerVerification>(LedgerVerification())
    /// Opens another handle on the store, for the ledger's check off the pages' handle.
    let openAnother: (@Sendable () throws(MsgError) -> any Store)?

    /// Pages of `store`, which the dashboard alone uses from now on.
    public init(store: any Store, options: Options, route: @escaping @Sendable (String) -> (line: String, transport: String), reporter: Reporter,
                openAnother: (@Sendable () throws(MsgError) -> any Store)? = nil) {
        self.store = StoreTurns(store)
        self.openAnother = openAnother
        self.options = options
        cache = PageCache(refresh: options.refresh)
        let routes = Mutex<[String: (line: String, transport: String)]>([:])
        // The config file is read once: a destination's route stays what it was.
        self.route = { destination in
            if let known = routes.withLock({ $0[destination] }) { return known }
            let answer = route(destination)
            routes.withLock { r in
                if r.count >= 100_000 { r.removeAll() }
                r[destination] = answer
            }
            return answer
        }
        self.reporter = reporter
        var generator = SystemRandomNumberGenerator()
        sessionToken = (0..<2).map { _ in Hex.encode(withUnsafeBytes(of: generator.next() as UInt64) { Array($0) }) }.joined()
    }

    /// Reads the counts for the rate charts now and every `seconds` after, until `stop`.
    public func sampleRates(every seconds: Int = 15, stop: @escaping @Sendable () -> Bool) {
        rates.start(every: seconds, stop: stop) { [self] () throws(MsgError) -> (sent: Int, failed: Int) in
            let f = try withStore { (s) throws(MsgError) in try Metrics(store: s).figures(now: .now()) }
            let sent = f.attempts["sent"]?.values.reduce(0, +) ?? 0
            let failed = (f.attempts["failed"]?.values.reduce(0, +) ?? 0) + (f.attempts["dead"]?.values.reduce(0, +) ?? 0)
            return (sent, failed)
        }
    }

    /// The answer to one request.
    public func respond(_ request: WebRequest) -> WebResponse {
        var response: WebResponse
        if let refused = refusal(request) {
            response = refused
        } else {
            do throws(MsgError) {
                response = try route(request)
            } catch {
                let status = error.code == .notFound ? 404 : error.code == .unreachable || error.code == .storeIO ? 503 : 400
                response = page(title: "msg: error", status: status) { h in
                    h.tag("<h1>Not shown</h1><p class=\"error\">")
                    h.text(error.message)
                    h.tag("</p>")
                }
            }
        }
        response.headers += Self.securityHeaders
        return response
    }

    /// Every answer's headers: no script but the page's own file, nothing from
    /// elsewhere, no framing, no sniffing, nothing kept by caches.
    static let securityHeaders = [
        WebHeader("content-security-policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
        WebHeader("x-content-type-options", "nosniff"),
        WebHeader("x-frame-options", "DENY"),
        WebHeader("referrer-policy", "same-origin"),
        WebHeader("cache-control", "no-store"),
    ]

    /// Why `request` is refused before any page is read: no access token, or a POST
    /// without the session token or from another origin.
    func refusal(_ request: WebRequest) -> WebResponse? {
        if options.addressedOnly, let host = request.header("host"), !Self.isAddress(host) {
            return Self.plain(403, "msg web: refused a request for \(host): without --token-file, open the dashboard by its address (http://127.0.0.1:PORT/)\n")
        }
        if let token = options.accessToken, !Self.carries(token, request) {
            return WebResponse(status: 401, headers: [WebHeader("www-authenticate", "Basic realm=\"msg\", charset=\"UTF-8\""),
                                                      WebHeader("content-type", "text/plain; charset=utf-8")],
                               body: Array("msg web: this dashboard needs its token (the password of any user name, or Authorization: Bearer)\n".utf8))
        }
        guard request.method == "POST" else {
            return request.method == "GET" || request.method == "HEAD" ? nil : Self.plain(405, "msg web: \(request.method) is not served\n")
        }
        guard options.allowActions else { return Self.plain(403, "msg web: actions are off (msg web --allow-actions)\n") }
        if let site = request.header("sec-fetch-site"), site != "same-origin", site != "none" {
            return Self.plain(403, "msg web: refused a POST from another site (\(site))\n")
        }
        if let origin = request.header("origin") {
            let host = request.header("host") ?? ""
            guard origin == "http://" + host || origin == "https://" + host else {
                return Self.plain(403, "msg web: refused a POST from another origin (\(origin))\n")
            }
        }
        guard let token = WebQuery(String(decoding: request.body, as: UTF8.self))["token"], Self.same(token, sessionToken) else {
            return Self.plain(403, "msg web: refused a POST without this page's session token (reload the page)\n")
        }
        return nil
    }

    /// Whether `host` (a Host field: name or address, then `:PORT`) is an IPv4 or
    /// IPv6 address or `localhost`.
    static func isAddress(_ host: String) -> Bool {
        var name = Substring(host)
        if name.hasPrefix("[") { return name.contains("]") }
        if let colon = name.lastIndex(of: ":") { name = name[..<colon] }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return name == "localhost" || (parts.count == 4 && parts.allSatisfy { UInt8($0) != nil })
    }

    /// Whether `request` carries `token`: Basic (any user) or Bearer.
    static func carries(_ token: String, _ request: WebRequest) -> Bool {
        guard let auth = request.header("authorization") else { return false }
        if auth.hasPrefix("Bearer ") { return same(String(auth.dropFirst(7)), token) }
        guard auth.hasPrefix("Basic "), let bytes = Base64.decode(String(auth.dropFirst(6))) else { return false }
        let pair = String(decoding: bytes, as: UTF8.self)
        guard let colon = pair.firstIndex(of: ":") else { return false }
        return same(String(pair[pair.index(after: colon)...]), token)
    }

    /// Compared in time that does not depend on where they differ.
    static func same(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count else { return false }
        var d: UInt8 = 0
        for i in x.indices { d |= x[i] ^ y[i] }
        return d == 0
    }

    /// The page or action `request` names.
    func route(_ request: WebRequest) throws(MsgError) -> WebResponse {
        let query = WebQuery(request.query)
        let parts = request.path.split(separator: "/").map { WebQuery.decode($0) }
        if request.method == "POST" { return try act(parts, form: WebQuery(String(decoding: request.body, as: UTF8.self))) }
        switch parts.first {
        case nil: return try cached(request) { () throws(MsgError) in try overview() }
        case "destinations" where parts.count == 1: return try cached(request) { () throws(MsgError) in try destinations(query) }
        case "messages" where parts.count == 1: return try messages(query)
        case "messages" where parts.count == 2: return try message(parts[1])
        case "dead" where parts.count == 1: return try cached(request) { () throws(MsgError) in try dead() }
        case "ledger" where parts.count == 1: return try ledger(verifyNow: query["verify"] != nil)
        case "assets" where parts.count == 2: return DashboardAssets.file(parts[1]) ?? Self.plain(404, "msg web: no such file\n")
        case "metrics" where parts.count == 1:
            let text = try withStore { (s) throws(MsgError) in try Metrics(store: s).render() }
            return WebResponse(status: 200, headers: [WebHeader("content-type", "text/plain; version=0.0.4; charset=utf-8")], body: Array(text.utf8))
        default: throw MsgError(.notFound, "no page at \(request.path)")
        }
    }

    /// `body` run with the store, one request at a time.
    func withStore<R>(_ body: (any Store) throws(MsgError) -> R) throws(MsgError) -> R {
        try store.turn(body)
    }

    /// The page for `request` from the last second's, or made now.
    func cached(_ request: WebRequest, _ make: () throws(MsgError) -> WebResponse) throws(MsgError) -> WebResponse {
        let key = request.path + "?" + request.query
        if let kept = cache.page(key) { return kept }
        let made = try make()
        cache.keep(key, made)
        return made
    }

    static func plain(_ status: Int, _ text: String) -> WebResponse {
        WebResponse(status: status, headers: [WebHeader("content-type", "text/plain; charset=utf-8")], body: Array(text.utf8))
    }

    static func redirect(_ to: String) -> WebResponse {
        WebResponse(status: 303, headers: [WebHeader("location", to)])
    }
}

/// Pages made in the last seconds, by path and query, so that many browsers
/// watching one page cost one read of the store each ``lifetime``.
final class PageCache: Sendable {
    private let pages = Mutex<[String: (at: Int64, page: WebResponse)]>([:])
    /// How long a page is kept, in milliseconds: half the pages' refresh, from 1 to 5 s.
    let lifetime: Int64
    static let capacity = 256

    init(refresh: Int = 5) { lifetime = Int64(min(5000, max(1000, refresh * 500))) }

    func page(_ key: String) -> WebResponse? {
        let now = Monotonic.milliseconds()
        return pages.withLock { p in p[key].flatMap { now - $0.at < lifetime ? $0.page : nil } }
    }

    func keep(_ key: String, _ page: WebResponse) {
        let now = Monotonic.milliseconds()
        pages.withLock { p in
            if p.count >= Self.capacity { p.removeAll() }
            p[key] = (now, page)
        }
    }

    /// Forgets every page (after an action changed the store).
    func clear() { pages.withLock { $0.removeAll() } }
}

