#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// Finds plugin libraries, checks they can be trusted, `dlopen`s them and
/// opens stores, transports, listeners and inboxes by URL (docs/DESIGN.md 4).
///
/// Search order: the given directories (`--plugin-path`, `MSG_PLUGIN_PATH`), the
/// executable's directory, then `<exe>/../lib/msg/plugins`. Only the plugins a
/// command needs are loaded: a known scheme maps to its library's name; an
/// unknown one makes the loader try every plugin on the path, in order.
public struct PluginLoader: Sendable {
    /// The directories searched, in order.
    public let searchPath: [String]
    private let registry: PluginRegistry

    /// The library that serves each scheme msg ships a plugin for.
    public static let bundled: [String: String] = [
        "json": "JSONFileStore", "sqlite": "SQLiteStore",
        "file": "FileDropTransport", "tcp": "TCPTransport", "stdout": "StdoutTransport", "exec": "ExecTransport", "nats": "NATSTransport",
        "http": "HTTPTransport", "https": "HTTPTransport",
        "postgres": "PostgresStore", "postgresql": "PostgresStore",
    ]

    /// A loader searching `extraDirectories` first, then the executable's directory
    /// and `<exe>/../lib/msg/plugins`.
    public init(extraDirectories: [String] = [], registry: PluginRegistry = .shared) {
        var path = extraDirectories.filter { !$0.isEmpty }
        if let exeDir = Self.executableDirectory() {
            path.append(exeDir)
            path.append(exeDir + "/../lib/msg/plugins")
        }
        self.searchPath = path
        self.registry = registry
    }

    /// The directory of the running executable, from `/proc/self/exe`.
    public static func executableDirectory() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let exe = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return SystemCalls.directory(of: exe)
    }

    /// Opens the store named by `url` for `access` (see ``StoreAccess``).
    /// - Throws: `unavailable` (69) for an unknown scheme or a plugin that cannot be
    ///   loaded; what the store's factory throws.
    public func openStore(_ url: String, access: StoreAccess = .write) throws(MsgError) -> any Store {
        let (parsed, factory) = try factory(for: url, kind: .store, lookup: registry.storeFactory)
        return try factory(parsed, access)
    }

    /// Opens the transport named by `url`. - Throws: as ``openStore(_:)``.
    public func openTransport(_ url: String) throws(MsgError) -> any Transport {
        let (parsed, factory) = try factory(for: url, kind: .transport, lookup: registry.transportFactory)
        return try factory(parsed)
    }

    /// Checks that `url` parses and a plugin serves its scheme as a transport,
    /// without opening it. - Throws: as ``openTransport(_:)`` before it opens.
    public func checkTransport(_ url: String) throws(MsgError) {
        _ = try factory(for: url, kind: .transport, lookup: registry.transportFactory)
    }

    /// Makes the listener named by `url` (`tcp://127.0.0.1:7000`). - Throws: as ``openStore(_:)``.
    public func openListener(_ url: String, context: ListenerContext) throws(MsgError) -> any Listener {
        let (parsed, factory) = try factory(for: url, kind: .listener, lookup: registry.listenerFactory)
        return try factory(parsed, context)
    }

    /// Opens the application's inbox named by `url` (`sqlite:/srv/app.db`).
    /// - Throws: as ``openStore(_:)``.
    /// A web server for `url` (`http://HOST:PORT`, `https://…`) from the WebServer
    /// plugin (msg-network-plugins), for `msg web` and `--metrics`.
    /// - Throws: `unavailable` when no plugin serves the scheme, the factory's errors.
    public func openWebServer(_ url: String, context: WebServerContext) throws(MsgError) -> any WebServer {
        let parsed = try PluginURL(url)
        if WebServers.factory(parsed.scheme) == nil, let path = find(library: "WebServer") { try load(path) }
        guard let factory = WebServers.factory(parsed.scheme) else {
            throw MsgError(.unavailable, "no web server plugin for \(parsed.scheme):// (libWebServer.so, of msg's network plugins, was not found; searched \(searchPath.joined(separator: ":")))")
        }
        return try factory(parsed, context)
    }

    public func openInbox(_ url: String) throws(MsgError) -> any DraftInbox {
        let (parsed, factory) = try factory(for: url, kind: .inbox, lookup: registry.inboxFactory)
        guard let inbox = try factory(parsed, .named) else {
            throw MsgError(.config, "\(parsed.scheme): keeps no inbox at \(url)")
        }
        return inbox
    }

    /// The inbox kept in the store at `url`, opened already: nil when the store's
    /// plugin registered no inbox for its scheme, or keeps none there. Only what is
    /// loaded is asked: a store without one costs nothing.
    /// - Throws: what the inbox's factory throws.
    public func storesOwnInbox(_ url: String) throws(MsgError) -> (any DraftInbox)? {
        let parsed = try PluginURL(url)
        guard let factory = registry.inboxFactory(parsed.scheme) else { return nil }
        return try factory(parsed, .storesOwn)
    }

    /// `url` parsed, and the factory of its scheme for `kind`, loading its plugin.
    /// - Throws: `config` for a URL that does not parse; `unavailable` for a scheme
    ///   no plugin serves.
    private func factory<F>(for url: String, kind: PluginRegistry.Kind, lookup: (String) -> F?) throws(MsgError) -> (PluginURL, F) {
        let parsed = try PluginURL(url)
        guard let factory = try resolve(parsed.scheme, kind: kind, lookup: lookup) else {
            throw unknownScheme(parsed.scheme, kind: kind)
        }
        return (parsed, factory)
    }

    private func resolve<F>(_ scheme: String, kind: PluginRegistry.Kind, lookup: (String) -> F?) throws(MsgError) -> F? {
        if let f = lookup(scheme) { return f }
        if let name = Self.bundled[scheme], let path = find(library: name) {
            try load(path)
            if let f = lookup(scheme) { return f }
        }
        for path in candidates() {
            try load(path)
            if let f = lookup(scheme) { return f }
        }
        return nil
    }

    private func unknownScheme(_ scheme: String, kind: PluginRegistry.Kind) -> MsgError {
        let known = registry.entries.filter { $0.kind == kind }.map { "\($0.scheme):" }
        let list = known.isEmpty ? "none found" : known.joined(separator: ", ")
        // A plugin that has the scheme but not this kind is there; say what it is.
        let other = registry.entries.first { $0.scheme == scheme && $0.kind != kind }
        let missing = other.map { "the \($0.plugin) plugin has '\(scheme):' as a \($0.kind.rawValue) only; " }
            ?? Self.bundled[scheme].flatMap { find(library: $0) == nil ? "lib\($0).so was not found; " : nil } ?? ""
        return MsgError(.unavailable, "no \(kind.rawValue) plugin for scheme '\(scheme):' (\(missing)known \(kind.rawValue) schemes: \(list); searched \(searchPath.joined(separator: ":")))")
    }

    /// Loads every plugin on the search path and returns what is registered.
    /// Files that cannot be loaded are reported in `problems`, not thrown.
    public func loadAll() -> (entries: [PluginRegistry.Entry], problems: [MsgError]) {
        var problems: [MsgError] = []
        for path in candidates() {
            do { try load(path) } catch { problems.append(error) }
        }
        return (registry.entries, problems)
    }

    /// The first `lib<name>.so` on the search path.
    func find(library name: String) -> String? {
        for dir in searchPath {
            let path = "\(dir)/lib\(name).so"
            if access(path, F_OK) == 0 { return path }
        }
        return nil
    }

    /// Every `lib*.so` on the search path but MsgKit's own, first of each name only.
    func candidates() -> [String] {
        var seen: Set<String> = []
        var result: [String] = []
        for dir in searchPath {
            guard let d = opendir(dir) else { continue }
            var names: [String] = []
            while let entry = readdir(d) {
                let name = withUnsafePointer(to: entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
                }
                guard name.hasPrefix("lib"), name.hasSuffix(".so"), !name.hasPrefix("libMsgKit") else { continue }
                names.append(name)
            }
            closedir(d)
            for name in names.sorted() where seen.insert(name).inserted {
                result.append("\(dir)/\(name)")
            }
        }
        return result
    }

    /// Checks and `dlopen`s one plugin file and registers its schemes.
    /// - Throws: `unavailable` when it is untrusted, cannot be loaded or speaks another ABI.
    public func load(_ path: String) throws(MsgError) {
        try registry.whileLoading { () throws(MsgError) in try loadLocked(path) }
    }

    private func loadLocked(_ path: String) throws(MsgError) {
        let real = Self.realPath(path) ?? path
        guard registry.markLoaded(real) else { return }
        try PluginTrust.check(real)
        guard let handle = dlopen(real, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown error"
            throw MsgError(.unavailable, "cannot load plugin \(path): \(reason)")
        }
        // Never dlclose: a Swift image cannot be unloaded safely.
        guard let symbol = dlsym(handle, "msg_plugin_register") else {
            return  // a library that is not a msg plugin
        }
        typealias Register = @convention(c) (UInt32, UnsafeMutableRawPointer) -> Int32
        let register = unsafeBitCast(symbol, to: Register.self)
        let status = registry.register(pluginAt: real) { register($0, $1) }
        guard status == 0 else {
            let theirs = UInt32(bitPattern: status)
            let newer = theirs >> 16 == PluginRegistrar.abiMajor && theirs & 0xFFFF > PluginRegistrar.abiMinor
            throw MsgError(.unavailable, "plugin \(path) was built for msg plugin ABI \(PluginRegistrar.describe(abi: theirs)), this msg speaks ABI \(PluginRegistrar.describe(abi: PluginRegistrar.abiVersion)); \(newer ? "upgrade msg" : "rebuild the plugin")")
        }
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

/// The rule that decides whether a plugin file may be loaded.
public enum PluginTrust {
    /// Refuses a plugin file, or its directory, that is writable by group or others
    /// or owned by someone other than root or the caller: anyone who can change it
    /// could run code as the user.
    /// - Throws: `unavailable` with a message saying which and why.
    public static func check(_ path: String) throws(MsgError) {
        try checkOne(path, what: "plugin", plugin: path)
        try checkOne(SystemCalls.directory(of: path), what: "plugin directory", plugin: path)
    }

    private static func checkOne(_ path: String, what: String, plugin: String) throws(MsgError) {
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw SystemCalls.error(.unavailable, "cannot inspect \(what) \(path)")
        }
        let mode = st.st_mode & 0o7777
        if mode & 0o022 != 0 {
            let octal = String(mode, radix: 8)
            throw MsgError(.unavailable, "refusing plugin \(plugin): \(what) \(path) is writable by group or others (mode \(octal)); run chmod go-w on it")
        }
        if st.st_uid != 0 && st.st_uid != geteuid() {
            throw MsgError(.unavailable, "refusing plugin \(plugin): \(what) \(path) is owned by uid \(st.st_uid), not by you or root")
        }
    }
}
