#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// `msg listen URL --into URL`: runs a listener until SIGINT or SIGTERM.
///
/// The two signals are blocked before the listener starts its threads, so they
/// reach only the main thread, which waits for them with `sigwait`; then the
/// listener stops accepting, finishes the deliveries in flight and their acks.
/// SIGHUP, blocked and waited for alike, makes a listener that reads files (TLS's
/// certificate and key, ``ListenerReloading``) read them again.
public struct ListenService {
    /// The address to listen on (`tcp://127.0.0.1:7000`).
    public var url: String
    /// The local transport received records go into.
    public var into: String
    /// The longest line accepted.
    public var maxLineBytes: Int
    /// The deadline of each delivery into `into`.
    public var deadline: MsgDuration
    /// Where to serve the listener's metrics (`--metrics HOST:PORT`), if anywhere.
    public var metrics: MetricsAddress?

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
        let signals = StopSignals(hangup: true)
        defer { signals.restore() }

        let counted = CountingSink(try loader.openTransport(into))
        let context = ListenerContext(sink: counted, sinkName: into, openWithoutToken: openWithoutToken, maxLineBytes: maxLineBytes,
                                      deadline: deadline, report: { [reporter] in reporter.say($0) })
        let listener = try loader.openListener(url, context: context)
        let bound = try listener.start()
        reporter.say("listening on \(bound), delivering into \(into)")
        let server = try metrics.map { (address) throws(MsgError) in
            try MetricsServer(address: address, render: Self.render(counted, listener.connectionCounts), reporter: reporter, loader: loader)
        }
        defer { server?.stop() }
        var received = signals.wait()
        while received == SIGHUP {
            reload(listener)
            received = signals.wait()
        }
        let signal = StopRequest.Reason.signal(received)
        reporter.say("stopping (\(signal.name)): finishing the deliveries in flight")
        listener.stop()
    }

    /// SIGHUP: the listener reads its files again, or keeps what it has and says why.
    private func reload(_ listener: any Listener) {
        guard let reloading = listener.reloading else {
            reporter.say("SIGHUP: this listener has no files to read again")
            return
        }
        do throws(MsgError) {
            if let what = try reloading.reload() {
                reporter.say("SIGHUP: read \(what) again; new connections use it, open ones are kept")
            } else {
                reporter.say("SIGHUP: this listener has no files to read again")
            }
        } catch {
            reporter.say("SIGHUP: \(error.message); still using what was read before")
        }
    }

    /// The listener's metrics: its connections (when it tells them) and the records
    /// it delivered into the sink or could not.
    static func render(_ sink: CountingSink, _ listener: (any ListenerStatistics)?) -> @Sendable () throws(MsgError) -> String {
        let statistics = listener.map { StatisticsHandOff($0) }
        return {
            var out = PrometheusText()
            if let counts = statistics?.listener.statistics() {
                out.family("msg_listener_connections", .gauge, help: "Connections open now.")
                out.sample("msg_listener_connections", [], Double(counts.open))
                out.family("msg_listener_connections_accepted_total", .counter, help: "Connections accepted since the listener started.")
                out.sample("msg_listener_connections_accepted_total", [], Double(counts.accepted))
                out.family("msg_listener_connections_refused_total", .counter, help: "Connections or hellos refused (too many, a bad token, too slow).")
                out.sample("msg_listener_connections_refused_total", [], Double(counts.refused))
            }
            out.family("msg_listener_records_received_total", .counter, help: "Records received, by whether the sink took them.")
            out.sample("msg_listener_records_received_total", [("outcome", "delivered")], Double(sink.delivered.load(ordering: .relaxed)))
            out.sample("msg_listener_records_received_total", [("outcome", "failed")], Double(sink.failed.load(ordering: .relaxed)))
            return out.text
        }
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
