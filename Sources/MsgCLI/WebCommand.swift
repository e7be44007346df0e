import ArgumentParser
import MsgEngine
import MsgKit
import MsgSupport
import Synchronization

/// `msg web`: a dashboard of the store in a browser (msg-web(1)).
struct WebCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "web",
        abstract: "Serve a dashboard of the store: counts, lag, destinations, messages, dead letters, the ledger.",
        discussion: """
            Read-only unless --allow-actions. Listens on 127.0.0.1 by default; another address \
            needs --token-file or https:// with client_ca= (client certificates). Needs the web \
            server plugin of msg's network plugins. Stops on SIGINT or SIGTERM.
            """
    )
    static let defaultAddress = "127.0.0.1:9470"

    @OptionGroup var global: GlobalOptions
    @Option(help: ArgumentHelp("Where to serve: HOST:PORT (http), http://HOST:PORT, or https://HOST:PORT?cert=FILE&key=FILE[&client_ca=FILE] (default: \(defaultAddress)).",
                               valueName: "address"))
    var listen = defaultAddress
    @Flag(name: .customLong("allow-actions"), help: "Allow retry, hold, release, suspend and resume from the page (the store is opened for writing).")
    var allowActions = false
    @Option(name: .customLong("token-file"), help: ArgumentHelp("An owner-only file whose first line every request must carry (the password of HTTP Basic authentication, or a Bearer token).",
                                                               valueName: "file"))
    var tokenFile: String?
    @Option(help: ArgumentHelp("Checkpoints (lines of msg ledger checkpoint) the ledger page verifies against; needs --pubkey.", valueName: "file"))
    var checkpoint: [String] = []
    @Option(help: ArgumentHelp("The public key the checkpoints are signed with.", valueName: "file")) var pubkey: String?
    @Option(help: "Seconds between a page's updates of itself; 0: never.", transform: ArgumentValue.count(from: 0, to: 3600))
    var refresh = 5

    func validate() throws {
        if !checkpoint.isEmpty && pubkey == nil { throw ValidationError("--checkpoint needs --pubkey, the key it is signed with") }
    }

    func run(_ session: Session) throws {
        let url = try Self.url(listen)
        let parsed = try PluginURL(url)
        var options = Dashboard.Options()
        options.allowActions = allowActions
        options.refresh = refresh
        options.storeName = Session.shown(session.settings.store)
        options.accessToken = try tokenFile.map { (file) throws(MsgError) in try SystemCalls.readSecretLine(file, what: "--token-file") }
        // With neither a token nor client certificates, only requests that name the
        // server by its address: a page elsewhere whose name was pointed at 127.0.0.1
        // (DNS rebinding) would otherwise read the queue.
        let clientCertificates = parsed.scheme == "https" && parsed.parameter("client_ca") != nil
        options.addressedOnly = options.accessToken == nil && !clientCertificates
        options.checkpoints = try pubkey.map { (key) throws(MsgError) in try LedgerCheckpoints.read(checkpoint, publicKeyFile: key) } ?? []
        let host = Self.host(parsed)
        if !Self.isLoopback(host), options.accessToken == nil, !clientCertificates {
            throw MsgError(.config, "msg web on \(host) can be reached from other hosts: give --token-file, or https:// with client_ca= (client certificates), or listen on 127.0.0.1")
        }
        let defaults = try PolicyOptions.parse([])
        let runPolicy = defaults.policy(session.settings.retry)
        let routeOptions = defaults.options(statuses: [.queued], policy: runPolicy, settings: session.settings)
        let lookup = RouteLookup(settings: session.settings, policy: runPolicy, options: routeOptions, flags: [])
        // As msg route words it, the transport without credentials or parameters.
        let route: @Sendable (String) -> (line: String, transport: String) = { destination in
            var answer = lookup.answer(destination)
            answer.transport = Session.shown(answer.transport)
            let line = RouteLookup.text(answer).split(separator: "\n").dropFirst()
                .map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }.joined(separator: " · ")
            return (line, answer.transport + " from " + (answer.from["transport"] ?? "default"))
        }
        let (loader, storeURL) = (session.loader, session.settings.store)
        let dashboard = Dashboard(store: try session.store(allowActions ? .write : .read), options: options, route: route,
                                  reporter: session.reporter,
                                  openAnother: { () throws(MsgError) in try loader.openStore(storeURL, access: .read) })
        let signals = StopSignals()
        defer { signals.restore() }
        let context = WebServerContext(respond: dashboard.respond)
        let server = try session.loader.openWebServer(url, context: context)
        let bound = try server.start()
        let stopped = Atomic<Bool>(false)
        dashboard.sampleRates(stop: { stopped.load(ordering: .acquiring) })
        session.reporter.say("dashboard of \(options.storeName) at \(bound)/" + (allowActions ? " (actions allowed)" : " (read-only)"))
        let received = signals.wait()
        stopped.store(true, ordering: .releasing)
        session.reporter.say("stopping (\(StopRequest.Reason.signal(received).name))")
        server.stop()
    }

    /// `HOST:PORT` as `http://HOST:PORT`; a URL as it is.
    static func url(_ text: String) throws(MsgError) -> String {
        if text.hasPrefix("http://") || text.hasPrefix("https://") { return text }
        guard !text.contains("://") else { throw MsgError(.usage, "--listen \(text): expected HOST:PORT, http://HOST:PORT or https://HOST:PORT?cert=FILE&key=FILE") }
        return "http://" + (text.hasPrefix(":") ? "127.0.0.1" + text : text)
    }

    static func host(_ url: PluginURL) -> String {
        guard let authority = url.authority, let colon = authority.lastIndex(of: ":") else { return url.authority ?? "" }
        let host = String(authority[..<colon])
        return host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    static func isLoopback(_ host: String) -> Bool {
        host.hasPrefix("127.") || host == "::1" || host == "localhost"
    }
}
