import Foundation
import MsgKit
import Testing

/// What the stdout mock's trace (`trace=PATH`) says: per destination, the order of
/// first attempts and the most messages in flight at once; the start times.
struct DeliveryTraceFile {
    var firstAttempts: [String: [String]] = [:]
    var maxInFlightPerKey = 0
    var maxInFlightTotal = 0
    var starts: [(ms: Int64, to: String, id: String)] = []

    /// The destinations of `order` (ids per key, in FIFO order) whose first attempts
    /// came in another order.
    func outOfOrder(_ order: [String: [String]]) -> [String] {
        order.filter { firstAttempts[$0.key] != $0.value }.map(\.key).sorted()
    }

    init(_ text: String) {
        var inFlight: [String: Int] = [:]
        var total = 0
        var seen = Set<String>()
        for line in text.split(separator: "\n") {
            let w = line.split(separator: " ").map(String.init)
            guard w.count >= 4, let ms = Int64(w[0]) else { continue }
            let (event, to, id) = (w[1], w[2], w[3])
            if event == "start" {
                inFlight[to, default: 0] += 1
                total += 1
                maxInFlightPerKey = max(maxInFlightPerKey, inFlight[to]!)
                maxInFlightTotal = max(maxInFlightTotal, total)
                starts.append((ms, to, id))
                if seen.insert(id).inserted { firstAttempts[to, default: []].append(id) }
            } else {
                inFlight[to, default: 0] -= 1
                total -= 1
            }
        }
    }
}

/// Delivery per destination through the real binary: order, parallelism, throttle,
/// breaker, expiry, and crashes with several workers.
@Suite(.timeLimit(.minutes(5))) struct PerDestinationTests {
    /// `keys` destinations `d0…` of `each` messages, interleaved; the ids per key in FIFO order.
    func fill(_ s: Sandbox, keys: Int, each: Int, store: String = "") throws -> [String: [String]] {
        let n = keys * each
        let r = try s.sh("seq 0 \(n - 1) | awk '{printf \"{\\\"to\\\":\\\"d%d\\\",\\\"body\\\":\\\"m%d\\\"}\\n\", $1 % \(keys), $1}' | msg compose --enqueue \(store)")
        #expect(r.status == 0, "\(r.err)")
        var order: [String: [String]] = [:]
        for m in try records(r.out) { order[m.to, default: []].append(m.id) }
        #expect(order.values.reduce(0) { $0 + $1.count } == n)
        return order
    }

    @Test func twoFlushProcessesKeepEachDestinationInOrderWithOneInFlight() throws {
        let s = try Sandbox()
        let order = try fill(s, keys: 8, each: 200)
        let mock = "stdout:?fd=3&latency=1ms&fail=0.1&seed=5&trace=\(s.home)/trace"
        let r = try s.sh("""
            msg flush --batch 16 --concurrency 8 --breaker 0 --transport '\(mock)' 3>/dev/null > a & pa=$!
            msg flush --batch 16 --concurrency 8 --breaker 0 --transport '\(mock)' 3>/dev/null > b & pb=$!
            wait $pa; ea=$?; wait $pb; eb=$?; echo "$ea $eb"
            cat a b | wc -l
            msg queue count --status sent,failed
            """)
        #expect(r.lines.count == 3 && r.lines[1] == "1600" && r.lines[2] == "1600", "\(r.out)\(r.err)")
        let trace = DeliveryTraceFile(try String(contentsOfFile: s.home + "/trace", encoding: .utf8))
        #expect(trace.maxInFlightPerKey == 1, "a destination never had two messages in flight, across both processes")
        #expect(trace.maxInFlightTotal > 1, "destinations went in parallel")
        #expect(trace.outOfOrder(order).isEmpty, "first attempts in FIFO order: \(trace.outOfOrder(order))")
    }

    /// Sixteen workers over a hundred slow destinations deliver many at once, never
    /// two of one destination. (How much faster that is, is a benchmark's to say:
    /// `scripts/bench --per-destination-only`; a ratio of times asserted here failed
    /// on a loaded machine.)
    @Test func sixteenWorkersDeliverManyDestinationsAtOnce() throws {
        let s = try Sandbox()
        _ = try fill(s, keys: 100, each: 2)
        let r = try s.sh("msg flush --concurrency 16 --transport 'stdout:?fd=3&latency=20ms&trace=\(s.home)/trace' 3>/dev/null | wc -l")
        #expect(r.lines.first == "200", "\(r.out)\(r.err)")
        let trace = DeliveryTraceFile(try String(contentsOfFile: s.home + "/trace", encoding: .utf8))
        #expect(trace.maxInFlightPerKey == 1, "a destination never had two messages in flight")
        #expect(trace.maxInFlightTotal >= 8, "sixteen workers had many destinations in flight at once: \(trace.maxInFlightTotal)")
    }

    @Test func twoProcessesShareOneDestinationsRate() throws {
        let s = try Sandbox()
        _ = try fill(s, keys: 1, each: 20)
        let mock = "stdout:?fd=3&trace=\(s.home)/trace"
        let r = try s.sh("""
            msg flush --rate 10/s --transport '\(mock)' 3>/dev/null > a & pa=$!
            msg flush --rate 10/s --transport '\(mock)' 3>/dev/null > b & pb=$!
            wait $pa; wait $pb
            cat a b | wc -l
            """)
        #expect(r.lines == ["20"], "\(r.out)\(r.err)")
        let starts = DeliveryTraceFile(try String(contentsOfFile: s.home + "/trace", encoding: .utf8)).starts.map(\.ms).sorted()
        #expect(starts.count == 20)
        #expect(starts.last! - starts.first! >= 1800, "20 at 10/s take about 1.9 s: \(starts.last! - starts.first!) ms")
        // The rate is kept where msg takes a message (its `attempt`, when the token is
        // taken): the transport's own start can lag it by a loaded machine's delay,
        // which would bunch starts a second apart into one window.
        let attempts = try records(s.sh("msg export --status sent").out).compactMap { m in
            m.history.last { $0.event == "attempt" }?.at.milliseconds
        }.sorted()
        #expect(attempts.count == 20)
        for (i, t) in attempts.enumerated() {
            let inASecond = attempts[i...].prefix { $0 < t + 1000 }.count
            #expect(inASecond <= 11, "at most the rate and the burst in any second: \(inASecond) from \(t)")
        }
    }

    /// A throttle whose next token is further off than a run waits: the run ends,
    /// says so, and the wait is visible to `msg destinations` and `msg queue show`.
    @Test func aThrottledDestinationIsShownWithItsNextToken() throws {
        let s = try Sandbox()
        let order = try fill(s, keys: 1, each: 3)
        let r = try s.sh("msg flush --rate 1/h | wc -l; echo \"${PIPESTATUS[0]}\"")
        #expect(r.lines == ["1", "75"], "one token, then an hour's wait: \(r.out)\(r.err)")
        #expect(r.err.contains("msg: destination d0: throttled (1/h) until ") && r.err.contains("; 2 messages wait"), "\(r.err)")
        let listed = try s.sh("msg destinations").out
        #expect(listed.contains("\"throttle\":\"1/h\",\"next_token\":\"") && listed.contains("\"queued\":2"), "\(listed)")
        let shown = try s.sh("msg queue show \(order["d0"]![1]) > /dev/null")
        #expect(shown.err.contains("waits: throttled: d0 may take its next message at ") && shown.err.hasSuffix("(1/h)\n"), "\(shown.err)")
    }

    @Test func aDownDestinationOpensItsBreakerAndTheRestFlows() throws {
        let s = try Sandbox()
        let made = try s.sh("""
            for i in 1 2 3 4 5 6 7 8; do echo '{"to":"down","body":"d'$i'"}'; done | msg compose --enqueue > down.ndjson
            for i in 1 2 3; do echo '{"to":"up","body":"u'$i'"}'; done | msg compose --enqueue > /dev/null
            """)
        #expect(made.status == 0, "\(made.err)")
        let downIDs = try records(try String(contentsOfFile: s.home + "/down.ndjson", encoding: .utf8)).map(\.id)
        let failing = "stdout:?fd=3&fail_to=down&trace=\(s.home)/trace"
        let first = try s.sh("msg flush --breaker 3 --breaker-cooldown 1h --transport '\(failing)' 3>/dev/null | wc -l; echo \"${PIPESTATUS[0]}\"")
        #expect(first.lines == ["6", "75"], "3 sent, 3 failed: \(first.out)\(first.err)")
        #expect(first.err.contains("msg: destination down: circuit open for 1h after 3 failures in a row (last: remote: injected remote failure"), "\(first.err)")
        #expect(first.err.contains("msg: destination down: circuit open until ") && first.err.contains("5 messages wait without an attempt counted"), "\(first.err)")
        let listed = try s.sh("msg destinations")
        let down = try #require(listed.lines.first { $0.contains("\"destination\":\"down\"") })
        #expect(down.contains("\"breaker\":\"open\"") && down.contains("\"failures\":3") && down.contains("\"queued\":5") && down.contains("\"failed\":3"), "\(down)")
        let shown = try s.sh("msg queue show \(downIDs[3]) > /dev/null")
        #expect(shown.err.hasPrefix("msg: \(downIDs[3]) waits: breaker: down is open until "), "\(shown.err)")

        // The next run respects what this one learnt: no attempt on the open destination.
        let second = try s.sh("msg flush --breaker 3 --transport '\(failing)' 3>/dev/null | wc -l; echo \"${PIPESTATUS[0]}\"")
        #expect(second.lines == ["0", "75"], "\(second.out)\(second.err)")
        let attempts = DeliveryTraceFile(try String(contentsOfFile: s.home + "/trace", encoding: .utf8)).starts.filter { $0.to == "down" }.count
        #expect(attempts == 3, "\(attempts) attempts on down")
        let counted = try records(try s.sh("msg queue ls --status queued").out)
        #expect(counted.count == 5 && counted.allSatisfy { $0.attempts == 0 })
    }

    @Test func aBreakerWhoseCoolDownEndedProbesOnceThenClosesWhenTheDestinationIsBack() throws {
        let s = try Sandbox()
        _ = try s.sh("for i in 1 2 3 4 5; do echo '{\"to\":\"down\",\"body\":\"'$i'\"}'; done | msg compose --enqueue > /dev/null")
        // A cool-down long enough that the run that opened the breaker cannot probe
        // (it would with 1 ms on a loaded machine), then waited out by asking msg.
        let opened = try s.sh("msg flush --breaker 2 --breaker-cooldown 1s --transport 'stdout:?fd=3&fail_to=down' 3>/dev/null > /dev/null")
        #expect(opened.status == 75 && opened.err.contains("circuit open for 1s after 2 failures"), "\(opened.err)")
        let halfOpen = try s.sh("for i in $(seq 100); do msg destinations | grep -q half-open && exit 0; sleep 0.05; done; exit 1")
        #expect(halfOpen.status == 0, "the cool-down ended: \(halfOpen.out)")
        let back = try s.sh("msg flush --breaker 2 --transport 'stdout:?fd=3&trace=\(s.home)/trace' 3>/dev/null | wc -l")
        #expect(back.status == 0 && back.lines == ["3"], "\(back.out)\(back.err)")
        #expect(back.err.contains("msg: destination down: circuit closed, a message went out"), "\(back.err)")
        let listed = try s.sh("msg destinations").out
        #expect(listed == "{\"destination\":\"down\",\"transport\":\"file:\(s.home)/outbox\",\"route\":\"default\",\"breaker\":\"closed\",\"failures\":0,\"queued\":0,\"failed\":2,\"sending\":0}\n",
                "closed, its two failed messages left for msg retry: \(listed)")
    }

    @Test func anExpiredMessageIsDeadWithoutAnAttemptAndRetryDeadGivesItANewExpiry() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            msg compose --to a --body soon --expires-in 1h --enqueue > /dev/null
            echo '{"to":"a","body":"late","expires_at":"2020-01-01T00:00:00Z"}' | msg compose --enqueue > late.ndjson
            msg flush --transport 'stdout:?fd=3&trace=\(s.home)/trace' 3>/dev/null > flushed.ndjson; echo "flush $?"
            """)
        #expect(r.lines == ["flush 1"], "\(r.out)\(r.err)")
        let late = try #require(try records(try String(contentsOfFile: s.home + "/late.ndjson", encoding: .utf8)).first)
        let stored = try #require(try records(try s.sh("msg queue ls --history --status dead").out).first)
        #expect(stored.id == late.id && stored.lastError?.code == "expired" && stored.attempts == 0)
        #expect(stored.history.map(\.event) == ["queued", "expired"])
        let traced = try String(contentsOfFile: s.home + "/trace", encoding: .utf8)
        #expect(!traced.contains(late.id), "never handed to the transport")
        let again = try s.sh("msg retry --dead --expires-in 1h | wc -l; msg flush > /dev/null; echo $?; msg queue count --status sent")
        #expect(again.lines == ["1", "0", "2"], "\(again.out)\(again.err)")
    }

    @Test func statsByDestinationCountsPerStatusAndAge() throws {
        let s = try Sandbox()
        _ = try fill(s, keys: 3, each: 4)
        _ = try s.sh("msg flush --limit 2 > /dev/null")
        let r = try s.sh("msg queue stats --by destination")
        let rows = r.lines
        #expect(rows.count == 5, "\(r.out)\(r.err)")
        #expect(rows.contains("{\"destination\":\"d0\",\"status\":\"queued\",\"total\":3,\"<5m\":3,\"<1h\":0,\"<1d\":0,\"<7d\":0,\"older\":0}"), "\(r.out)")
        #expect(rows.contains("{\"destination\":\"d2\",\"status\":\"queued\",\"total\":4,\"<5m\":4,\"<1h\":0,\"<1d\":0,\"<7d\":0,\"older\":0}"), "\(r.out)")
    }

    /// exec: commands of different destinations run at once, one per destination:
    /// each worker has its own transport, and the runs reap only their own children.
    @Test func execCommandsOfDifferentDestinationsRunAtOnceOnePerDestination() throws {
        let s = try Sandbox()
        let order = try fill(s, keys: 4, each: 3)
        let script = s.home + "/send"
        try "#!/bin/sh\necho \"$(date +%s%N) start $MSG_TO $MSG_ID\" >> \(s.home)/log\nsleep 0.1\necho \"$(date +%s%N) end $MSG_TO $MSG_ID\" >> \(s.home)/log\n"
            .write(toFile: script, atomically: true, encoding: .utf8)
        let r = try s.sh("chmod 755 send; msg flush --concurrency 4 --transport 'exec:\(script)?concurrency=4' | wc -l")
        #expect(r.status == 0 && r.lines == ["12"], "\(r.out)\(r.err)")
        // The log's lines in time order: the trace format the mock writes.
        let lines = try String(contentsOfFile: s.home + "/log", encoding: .utf8).split(separator: "\n")
            .sorted { Int64($0.split(separator: " ")[0])! < Int64($1.split(separator: " ")[0])! }
        let trace = DeliveryTraceFile(lines.joined(separator: "\n"))
        #expect(trace.maxInFlightPerKey == 1, "one command per destination at a time")
        #expect(trace.maxInFlightTotal > 1, "destinations ran at once")
        #expect(trace.outOfOrder(order).isEmpty, "in FIFO order: \(trace.outOfOrder(order))")
    }

    /// kill -9 in the middle of a flush with four workers, then recover and flush:
    /// every id reaches the drop exactly once.
    @Test func randomKillsOfAConcurrentFlushThenRecoverDeliverEachOnce() throws {
        var rng = SystemRandomNumberGenerator()
        for round in 0..<8 {
            let s = try Sandbox()
            _ = try fill(s, keys: 50, each: 10)
            let killAfter = Int.random(in: 0..<500, using: &rng)
            try s.killFlush(["flush", "--batch", "16", "--concurrency", "4"], after: killAfter)
            // A reader takes what was delivered so far: a second delivery would land in new/ again.
            _ = try s.sh("mkdir -p outbox/cur; for f in outbox/new/*.json; do [ -e \"$f\" ] && mv \"$f\" outbox/cur/; done; true")
            let r = try s.sh("msg recover --stale-after 0s > /dev/null; msg flush --concurrency 4 > /dev/null; echo $?")
            #expect(r.out == "0\n", "round \(round): \(r.err)")
            let st = try records(try s.sh("msg queue ls").out)
            #expect(st.count == 500 && st.allSatisfy { $0.status == .sent }, "round \(round)")
            let files = ["new", "cur"].flatMap { d in
                ((try? FileManager.default.contentsOfDirectory(atPath: s.home + "/outbox/" + d)) ?? []).map { String($0.prefix(36)) }
            }
            #expect(files.count == 500 && Set(files) == Set(st.map(\.id)), "round \(round), killed after \(killAfter): \(files.count) files")
        }
    }
}
