#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// Failures the `stdout:` mock injects, from its URL's query parameters:
/// `fail=RATE` with `seed=N` (deterministic per id and attempt), `error=CLASS`
/// (`timeout`, `unreachable`, `rejected`, `remote`, `rate_limited`; default `remote`),
/// `latency=DUR`, `fail_ids=ID,…`, `fail_first=N` (a message fails while fewer than
/// N attempts are recorded on it), `retry_after=DUR` (for `rate_limited`),
/// `fail_to=A,B` (every message to these recipients fails: a destination that is
/// down), `down_while=PATH` (every message fails while the file PATH exists: an
/// outage that ends when it is removed), `trace=PATH` (a line appended as each attempt starts and ends:
/// `MS start TO ID` / `MS end TO ID OUTCOME`, MS the time in milliseconds, one
/// `write` each, so several processes can share one trace).
struct FaultPlan {
    var rate = 0.0
    var seed: UInt64 = 0
    var error = MsgError.Code.remote
    var latency = MsgDuration(milliseconds: 0)
    var failIDs: Set<String> = []
    var failFirst = 0
    var retryAfter = MsgDuration.seconds(5)
    var failTo: Set<String> = []
    var trace: String?
    var downWhile: String?

    /// - Throws: `config` naming the parameter that is wrong.
    init(_ url: PluginURL) throws(MsgError) {
        func bad(_ name: String, _ value: String, _ expected: String) -> MsgError {
            MsgError(.config, "stdout: parameter \(name)=\(value) is not valid; expected \(expected)")
        }
        for (name, value) in url.parameters {
            switch name {
            case "fail":
                guard let r = Double(value), (0...1).contains(r) else { throw bad(name, value, "a rate between 0 and 1") }
                rate = r
            case "seed":
                guard let s = UInt64(value) else { throw bad(name, value, "a whole number") }
                seed = s
            case "error":
                guard let c = MsgError.Code(name: value), c.isDeliveryClass else {
                    throw bad(name, value, "timeout, unreachable, rejected, remote or rate_limited")
                }
                error = c
            case "latency": latency = try MsgDuration(parsing: value)
            case "retry_after": retryAfter = try MsgDuration(parsing: value)
            case "fail_ids": failIDs = Set(value.split(separator: ",").map(String.init))
            case "fail_to": failTo = Set(value.split(separator: ",").map(String.init))
            case "trace": trace = value
            case "down_while": downWhile = value
            case "fail_first":
                guard let n = Int(value), n >= 0 else { throw bad(name, value, "a whole number") }
                failFirst = n
            case "fd": break
            default:
                throw MsgError(.config, "stdout: unknown parameter '\(name)'; known: fail, seed, error, latency, fail_ids, fail_to, fail_first, retry_after, down_while, trace, fd")
            }
        }
    }

    /// The injected failure for `m`, if any, after waiting the latency (or the deadline,
    /// when the latency exceeds it: then the failure is a timeout).
    func outcome(for m: Message, deadline: MsgDuration) -> DeliveryOutcome? {
        if latency.milliseconds > 0 {
            let wait = min(latency, deadline)
            usleep(useconds_t(wait.milliseconds * 1000))
            if latency > deadline {
                return .failed(MsgError(.timeout, "no answer within the \(deadline) deadline"), retryAfter: nil)
            }
        }
        let injected = failIDs.contains(m.id) || failTo.contains(m.to) || m.attempts < failFirst || (rate > 0 && draw(m) < rate)
            || (downWhile.map { access($0, F_OK) == 0 } ?? false)
        guard injected else { return nil }
        let text = "injected \(error.name) failure (attempt \(m.attempts + 1))"
        return .failed(MsgError(error, text), retryAfter: error == .rateLimited ? retryAfter : nil)
    }

    /// A number in [0, 1) fixed by the seed, the id and the attempt: the same on every run.
    private func draw(_ m: Message) -> Double {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325 ^ seed
        for byte in m.id.utf8 {
            h ^= UInt64(byte)
            h = h &* 0x100_0000_01B3
        }
        var rng = SplitMix64(seed: h ^ UInt64(m.attempts))
        return rng.unit()
    }
}
