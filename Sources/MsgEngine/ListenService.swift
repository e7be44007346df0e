#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// `msg listen URL --into URL`: runs a listener until SIGINT or SIGTERM.
///
/// The two signals are blocked before the listener starts its threads, so they
/// reach only the main thread, which waits for them with `sigwait`; then the
/// listener stops accepting, finishes the deliveries in flight and their acks.
public struct ListenService {
    /// The address to listen on (`tcp://127.0.0.1:7000`).
    public var url: String
    /// The local transport received records go into.
    public var into: String
    /// The longest line accepted.
    public var maxLineBytes: Int
    /// The deadline of each delivery into `into`.
    public var deadline: MsgDuration

    private let reporter: Reporter
    private let openWithoutToken: Bool

    /// A service listening on `url` and delivering into `into`; what it has to say
    /// (including what the listener logs) goes to `reporter`. `openWithoutToken`:
    /// the user allowed a listener other hosts can reach to need no token.
    public init(url: String, into: String, maxLineBytes: Int, deadline: MsgDuration, openWithoutToken: Bool = false,
                reporter: Reporter) {
        self.url = url
        self.into = into
        self.maxLineBytes = maxLineBytes
        self.deadline = deadline
        self.openWithoutToken = openWithoutToken
        self.reporter = reporter
    }

    /// Serves until a signal. - Throws: `unavailable` (cannot bind, no plugin), `config`.
    public func run(loader: PluginLoader) throws(MsgError) {
        let signals = StopSignals()
        defer { signals.restore() }

        let sink = try loader.openTransport(into)
        let context = ListenerContext(sink: sink, sinkName: into, openWithoutToken: openWithoutToken, maxLineBytes: maxLineBytes,
                                      deadline: deadline, report: { [reporter] in reporter.say($0) })
        let listener = try loader.openListener(url, context: context)
        let bound = try listener.start()
        reporter.say("listening on \(bound), delivering into \(into)")
        let signal = StopRequest.Reason.signal(signals.wait())
        reporter.say("stopping (\(signal.name)): finishing the deliveries in flight")
        listener.stop()
    }

    /// Reads a size: `1048576`, `512KiB`, `1MiB` (also `k`/`K`, `m`/`M`).
    /// - Throws: `usage` for anything else.
    public static func parseSize(_ text: String) throws(MsgError) -> Int {
        let units: [(String, Int)] = [("KiB", 1 << 10), ("MiB", 1 << 20), ("k", 1 << 10), ("K", 1 << 10), ("m", 1 << 20), ("M", 1 << 20)]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            if let n = Int(text.dropLast(suffix.count)), n > 0, n <= Int.max / factor { return n * factor }
        }
        if let n = Int(text), n > 0 { return n }
        throw MsgError(.usage, "'\(text)' is not a size; write bytes (1048576) or 512KiB, 1MiB")
    }
}
