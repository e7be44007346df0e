#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// How `flush --watch` rides out a store it cannot reach (a PostgreSQL restart, a
/// failover): a call that fails `unreachable` is made again, after a wait that
/// doubles from `first` up to `most` with jitter, until it goes through or a stop is
/// asked for. Nothing is assumed about the failed call: a claim that failed
/// committed nothing (it is made again with a fresh plan), and an outcome that
/// failed is written again by compare-and-set, so it is never recorded twice.
///
/// The outage is said once when it starts and once when it ends, with its length.
public final class StoreOutage {
    private let name: String
    private let stop: StopRequest
    private let reporter: Reporter
    private let clock: @Sendable () -> Timestamp
    private let sleep: @Sendable (MsgDuration) -> Void
    private let first: MsgDuration
    private let most: MsgDuration
    private var random: SplitMix64
    /// When the outage began; nil while the store answers.
    private(set) var since: Timestamp?
    /// How many outages have ended.
    private(set) var ended = 0

    public init(store name: String, stop: StopRequest, reporter: Reporter, clock: @escaping @Sendable () -> Timestamp = { .now() },
                sleep: @escaping @Sendable (MsgDuration) -> Void = { d in usleep(useconds_t(d.milliseconds * 1000)) }, first: MsgDuration = MsgDuration(milliseconds: 100),
                most: MsgDuration = .seconds(5), seed: UInt64 = UInt64.random(in: 0...UInt64.max)) {
        self.name = name
        self.stop = stop
        self.reporter = reporter
        self.clock = clock
        self.sleep = sleep
        self.first = first
        self.most = most
        random = SplitMix64(seed: seed)
    }

    /// Whether the store answered the last call.
    public var isUp: Bool { since == nil }

    /// Runs `body`, again and again while it fails `unreachable`.
    /// - Throws: what `body` throws otherwise; when a stop is asked for during an
    ///   outage, the last `unreachable` error, saying so.
    public func retrying<R>(_ what: String, _ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        var wait = first.milliseconds
        while true {
            do throws(MsgError) {
                let result = try body()
                if let since {
                    let seconds = Double(clock().milliseconds - since.milliseconds) / 1000
                    reporter.say("store \(name) is reachable again after \(Self.format(seconds)); going on")
                    self.since = nil
                    ended += 1
                }
                return result
            } catch where error.code == .unreachable {
                if since == nil {
                    since = clock()
                    reporter.say("\(error.message); \(what) waits for the store and tries again (stop with SIGTERM)")
                }
                // Half the wait fixed, half drawn at random, so workers that lost one
                // server together do not come back together.
                let pause = wait / 2 + Int64(random.next() % UInt64(max(1, wait / 2)))
                let until = clock().milliseconds + pause
                while stop.reason == nil, clock().milliseconds < until {
                    sleep(MsgDuration(milliseconds: min(100, until - clock().milliseconds)))
                }
                if let reason = stop.reason {
                    throw MsgError(.unreachable, "\(error.message); stopped by \(reason.name) while waiting for the store"
                                   + " (what was in flight stays sending until msg recover, once the store is back)")
                }
                wait = min(most.milliseconds, wait * 2)
            }
        }
    }

    private static func format(_ seconds: Double) -> String {
        seconds < 10 ? "\((seconds * 10).rounded() / 10) s" : "\(Int(seconds.rounded())) s"
    }
}

extension Optional where Wrapped == StoreOutage {
    /// Runs a store call through the outage when there is one (`flush --watch`), and
    /// once otherwise: its error then ends the run.
    func retrying<R>(_ what: String, _ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        guard let outage = self else { return try body() }
        return try outage.retrying(what, body)
    }
}
