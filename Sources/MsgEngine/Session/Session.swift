import MsgKit
import MsgSupport

/// One command's view of msg: its settings, and the store and transport it opens
/// on first use (so `--help` and `queue count` never load a transport).
public final class Session {
    /// The resolved settings.
    public let settings: Settings
    /// Finds and loads plugins.
    public let loader: PluginLoader
    private var openStore: (any Store)?
    private var openTransport: (any Transport)?
    /// Whether ``store(_:)`` reports damaged files set aside (not while completing a
    /// word at the shell's prompt).
    public var reportsSetAside = true

    /// Where the command reads and speaks (``Console``).
    public let console: Console
    /// Where the session says what the user should know (a store set aside).
    public var reporter: Reporter { console.reporter }

    /// A session on `settings`, reading and speaking through `console`.
    public init(settings: Settings, console: Console) {
        self.settings = settings
        self.console = console
        self.loader = PluginLoader(extraDirectories: settings.pluginPath)
    }

    /// What a command does with the store.
    public enum StoreUse: Sendable {
        /// Looks only (`queue ls`, `count`, `show`, `stats`, `export`): the store must exist.
        case read
        /// Changes messages (`queue add`, `rm`, `mark`…): the store is made when missing.
        case write
        /// Sends or resolves messages (`flush`, `retry`, `recover`): as `write`, and
        /// refused while a damaged file set aside holds the queue as it was.
        case send
    }

    /// The store, opened on first use for `use`. When damaged files it set aside
    /// are beside it, says so on stderr, one line each.
    /// - Throws: `unavailable`, `config`, `storeIO`; `corrupt` for `.send` while
    ///   such files are there.
    public func store(_ use: StoreUse = .write) throws(MsgError) -> any Store {
        // The empty stand-in serves looks only: a write opens (and makes) the store.
        if let openStore, use == .read || !(openStore is EmptyStore) { return openStore }
        // First contact: nothing was ever queued on the default store, so a look
        // finds an empty queue (as mailq does), and creates nothing. A store that
        // was named stays an error when missing: it catches typos.
        if use == .read, let file = settings.defaultStoreFile, !SystemCalls.exists(file),
           DamagedFile.setAside(besides: file, companions: ["-wal", "-shm"]).isEmpty {
            let empty = EmptyStore()
            openStore = empty
            return empty
        }
        // The default store lives in msg's own home, which msg makes (a named store's
        // directory must be there: StoreFile).
        if use != .read && settings.defaultStoreFile != nil { try SystemCalls.makeDirectories(settings.home, code: .storeIO) }
        let s = try loader.openStore(settings.store, access: use == .read ? .read : .write)
        let aside = s.setAside()
        if use == .send, let file = aside.last {
            // One line: what was found, where it is, and why nothing is sent.
            throw MsgError(.corrupt, "store \(settings.store) was found damaged and set aside as \(file), which may hold messages this store does not: not sending or recovering until they are recovered and that file is moved away (msg-record(5), DAMAGED STORES)")
        }
        for file in aside where reportsSetAside {
            reporter.say("store \(settings.store) was found damaged and set aside as \(file), which may hold messages this store does not; recover them, then move that file away (msg-record(5), DAMAGED STORES)")
        }
        openStore = s
        return s
    }

    /// Where an inbox row msg refuses keeps a text too large for its dead record:
    /// `$MSG_HOME/refused` (msg-inbox(1)).
    public var refusedDrafts: RefusedDrafts { RefusedDrafts(directory: settings.home + "/refused") }

    /// Stored ids for completion: those starting with `part`; else the one id that
    /// ends with it (the short id a table shows), so TAB on it gives the whole id.
    /// Several ending with it give none: their common start would replace what was typed.
    public func storedIDs(matching part: String, limit: Int = 200) -> [String] {
        var found: [String] = [], ending: [String] = []
        let suffixes = ShortID.isCandidate(part)
        do {
            try store(.read).list(Query()) { (r) throws(MsgError) -> Bool in
                let id = r.message.id
                if id.hasPrefix(part) { found.append(id) } else if suffixes && ending.count < 2 && id.hasSuffix(part) { ending.append(id) }
                return found.count < limit
            }
        } catch {
            return []
        }
        return found.isEmpty && ending.count == 1 ? ending : found
    }

    /// Another transport of the same URL, for one more delivery worker.
    public func anotherTransport() throws(MsgError) -> any Transport {
        try openRouted()
    }

    /// The transport, opened on first use. - Throws: `unavailable`, `config`.
    public func transport() throws(MsgError) -> any Transport {
        if let openTransport { return openTransport }
        let t = try openRouted()
        openTransport = t
        if let line = settings.routeOverride { reporter.say(line) }
        for url in [settings.transport] + settings.routes.map(\.transport) {
            if let warning = Self.clearTextToken(url) { reporter.say(warning) }
        }
        return t
    }

    /// The transport of the settings: with routes (the config file's
    /// `[destination]` sections), one that picks a route per message. A route that
    /// cannot be opened is a configuration error naming its section.
    private func openRouted() throws(MsgError) -> any Transport {
        // The default outbox lives in msg's own home, which msg makes.
        if settings.transport == Settings.defaultTransport(home: settings.home) {
            try SystemCalls.makeDirectories(settings.home, code: .unavailable)
        }
        let fallback = try loader.openTransport(settings.transport)
        guard !settings.routes.isEmpty else { return fallback }
        var routes: [RoutingTransport.Route] = []
        for route in settings.routes {
            do throws(MsgError) {
                routes.append(RoutingTransport.Route(pattern: route.pattern, url: route.transport, transport: try loader.openTransport(route.transport)))
            } catch {
                throw MsgError(error.code, "\(route.origin.isEmpty ? "[destination \(route.pattern)]" : route.origin) transport: \(error.message)", underlying: error.underlying)
            }
        }
        return RoutingTransport(routes: routes, fallback: fallback)
    }

    /// A transport URL as shown to a person: no credentials (`user:password@`), no
    /// parameters (a token, a key file); the scheme, host and path say which it is.
    public static func shown(_ url: String) -> String {
        let text = String(url.prefix { $0 != "?" })
        guard let scheme = text.firstRange(of: "://") else { return text }
        let rest = text[scheme.upperBound...]
        let authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return text }
        return String(text[..<scheme.upperBound] + rest[rest.index(after: at)...])
    }

    /// The transport URL messages to `to` take (``Settings/route(for:)``).
    public func transportURL(for to: String) -> String { settings.route(for: to).url }

    /// The warning, said once a command, for a token that tcp:// sends in clear text
    /// to another host; nil for any other transport, or one without a token, or to a
    /// loopback address.
    static func clearTextToken(_ text: String) -> String? {
        guard let url = try? PluginURL(text), url.scheme == "tcp", let authority = url.authority,
              url.parameters.contains(where: { $0.name == "token" || $0.name == "token_file" }) else { return nil }
        let host = authority.hasPrefix("[") ? String(authority.dropFirst().prefix { $0 != "]" }) : String(authority.prefix { $0 != ":" })
        if host == "localhost" || host == "::1" || host.hasPrefix("127.") { return nil }
        return "warning: tcp://\(authority) is sent its token in clear text: anyone on the network path can read it and deliver into the receiver with it; use tls:// (msg-tcp(7)), a tunnel (ssh -L, WireGuard) or a network only your hosts reach"
    }
}

/// What to do with a bad input line (`--on-error`).
public enum OnError: String, Sendable, CaseIterable {
    /// Report it on stderr, go on with the good lines, exit 65 at the end.
    case skip
    /// Report it and stop before anything is stored; exit 65.
    case abort
}
