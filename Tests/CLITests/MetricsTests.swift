import Foundation
import MsgKit
import Testing

/// `msg metrics` (#27), through the real binary, checked by Prometheus's own
/// `promtool check metrics` (Debian's prometheus package, from scripts/deps).
@Suite(.timeLimit(.minutes(2))) struct MetricsTests {
    /// A store with sent, failed, dead, held, future and suspended messages: every
    /// family is there, promtool accepts it, and the values are the store's.
    @Test func theStoreIsToldInPrometheusTextFormat() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            (for i in 1 2 3; do echo '{"to":"ok@x","body":"'$i'"}'; done
             echo '{"to":"down@x","body":"f"}'
             echo '{"to":"quote\\"d@x","body":"q"}') | msg compose --enqueue > /dev/null
            echo '{"to":"later@x","body":"l","not_before":"2999-01-01T00:00:00Z"}' | msg compose --enqueue > /dev/null
            msg flush --transport 'stdout:?fd=3&fail_to=down@x' 3>/dev/null > /dev/null 2>&1
            echo '{"to":"gone@x","body":"d"}' | msg compose --enqueue > /dev/null
            msg flush --transport 'stdout:?fd=3&fail_to=gone@x&error=rejected' 3>/dev/null > /dev/null 2>&1
            msg destinations suspend paused@x --reason test 2>/dev/null
            msg metrics > metrics.txt; echo "exit $?"
            promtool check metrics < metrics.txt && echo promtool ok
            cat metrics.txt
            """)
        #expect(Array(r.lines.prefix(2)) == ["exit 0", "promtool ok"], "\(r.out) \(r.err)")
        let samples = Set(r.lines.filter { !$0.hasPrefix("#") })
        for line in ["msg_messages{status=\"sent\"} 4", "msg_messages{status=\"failed\"} 1", "msg_messages{status=\"dead\"} 1",
                     "msg_messages{status=\"queued\"} 1", "msg_queue_due_messages 0", "msg_queue_lag_seconds 0",
                     "msg_attempts_total{outcome=\"sent\",code=\"\"} 4", "msg_attempts_total{outcome=\"failed\",code=\"remote\"} 1",
                     "msg_attempts_total{outcome=\"dead\",code=\"rejected\"} 1", "msg_enqueue_to_sent_seconds_count 4",
                     "msg_destination_deliveries_total{destination=\"ok@x\"} 3",
                     "msg_destination_deliveries_total{destination=\"quote\\\"d@x\"} 1",
                     "msg_destination_failures_total{destination=\"down@x\"} 1",
                     "msg_destinations{state=\"suspended\"} 1", "msg_destination_state{destination=\"paused@x\",state=\"suspended\"} 1"] {
            #expect(samples.contains(line), "\(line) in \(r.out)")
        }
    }

    /// `--top` bounds the per-destination series; `--textfile` writes DIR/msg.prom
    /// whole, readable by node_exporter; a missing directory is a clear error.
    @Test func seriesAreBoundedAndTheTextfileIsReplacedWhole() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            (for i in 1 2 3; do echo '{"to":"a@x","body":"'$i'"}'; done
             for i in 1 2; do echo '{"to":"b@x","body":"'$i'"}'; done
             echo '{"to":"c@x","body":"c"}') | msg compose --enqueue > /dev/null
            msg flush --transport stdout: > /dev/null
            mkdir textfiles
            msg metrics --top 1 --textfile textfiles; echo "exit $?"
            stat -c %a textfiles/msg.prom; ls textfiles
            grep '^msg_destination_deliveries_total' textfiles/msg.prom
            msg metrics --textfile missing 2>&1; echo "exit $?"
            """)
        #expect(r.lines == ["exit 0", "644", "msg.prom",
                            "msg_destination_deliveries_total{destination=\"a@x\"} 3",
                            "msg_destination_deliveries_total{destination=\"(other)\"} 3",
                            "msg: --textfile missing: not a directory (node_exporter's --collector.textfile.directory)", "exit 78"],
                "\(r.out) \(r.err)")
    }

    /// The counts the SQLite store keeps with every change (#32) give the metrics
    /// its records give: the same records as lines of a JSON store written without
    /// its journal lines, whose counts are made afresh from the records (their
    /// histories' attempts too), tell the same (destination states apart: they were
    /// not copied). `queue purge` lowers the messages but not the counters of attempts.
    @Test func theStoresCountsTellWhatItsRecordsTellAndPurgeLeavesTheCounters() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            (for i in $(seq 1 30); do echo '{"to":"ok'$((i % 4))'@x","body":"'$i'"}'; done
             for i in 1 2 3; do echo '{"to":"down@x","body":"f'$i'"}'; done
             echo '{"to":"gone@x","body":"d"}'
             echo '{"to":"later@x","body":"l","not_before":"2999-01-01T00:00:00Z"}') | msg compose --enqueue > /dev/null
            msg flush --transport 'stdout:?fd=3&fail_to=down@x' 3>/dev/null > /dev/null 2>&1
            msg flush --transport 'stdout:?fd=3&fail_to=gone@x&error=rejected' 3>/dev/null > /dev/null 2>&1
            (echo '{"to":"due@x","body":"1"}'; echo '{"to":"ok1@x","body":"2"}'; echo '{"to":"held@x","body":"3"}') | msg compose --enqueue > /dev/null
            msg queue ls --to held@x | msg queue hold > /dev/null
            msg queue ls --to due@x | msg queue edit --to moved@x > /dev/null
            msg destinations suspend ok1@x --reason test 2>/dev/null
            msg queue ls --history > copy.json
            msg destinations suspend ok1@x --reason test --store json:copy.json 2>/dev/null
            msg metrics | grep -v '^msg_destination' > sqlite.txt
            msg metrics --store json:copy.json | grep -v '^msg_destination' > json.txt
            grep -v lag_seconds sqlite.txt > a.txt; grep -v lag_seconds json.txt > b.txt
            diff a.txt b.txt && echo same
            grep -c . a.txt
            grep -h '^msg_queue_lag_seconds' sqlite.txt json.txt | awk '$2 > 0 { n++ } END { print n " lags above zero" }'
            grep '^msg_attempts_total' sqlite.txt > attempts-before.txt
            msg queue purge --status sent,dead --older-than 0s 2>&1
            msg metrics > after.txt
            grep '^msg_attempts_total' after.txt | diff attempts-before.txt - && echo counters kept
            grep -E '^msg_messages\\{status="(sent|dead)"\\}' after.txt
            msg queue count --status queued; msg queue count --to moved@x
            msg destinations | grep -c '"queued":[1-9]'
            """)
        #expect(r.lines.first == "same", "\(r.out) \(r.err)")
        #expect(Int(r.lines.dropFirst().first ?? "") ?? 0 > 40, "lines compared: \(r.out)")
        #expect(Array(r.lines.dropFirst(2)) == [
            "2 lags above zero", "msg: purged 31 messages", "counters kept",
            "msg_messages{status=\"sent\"} 0", "msg_messages{status=\"dead\"} 0",
            "3", "1", "3",
        ], "\(r.out) \(r.err)")
    }

    /// `flush --watch --metrics` serves the same text at /metrics while it runs,
    /// current at each scrape; anything else is 404.
    @Test func aWatchServesMetricsWhileItRuns() throws {
        let s = try Sandbox()
        let env = ["MSG_PLUGIN_PATH": try webServerPlugin()]
        let r = try s.sh("""
            msg compose --to a@x --body one --enqueue > /dev/null
            msg flush --watch --metrics 127.0.0.1:0 --transport stdout: > out 2> err & pid=$!
            for i in $(seq 200); do grep -q 'metrics at' err && break; sleep 0.05; done
            url=$(sed -n 's/^msg: metrics at \\(http:[^ ]*\\).*/\\1/p' err)
            for i in $(seq 200); do [ "$(msg queue count --status sent)" = 1 ] && break; sleep 0.05; done
            curl -s "$url" > first.txt
            promtool check metrics < first.txt && echo promtool ok
            grep '^msg_messages{status="sent"}' first.txt
            msg compose --to b@x --body two --enqueue > /dev/null
            for i in $(seq 200); do [ "$(msg queue count --status sent)" = 2 ] && break; sleep 0.05; done
            curl -s "$url" | grep '^msg_messages{status="sent"}'
            curl -s -o /dev/null -w '%{http_code}\\n' "${url%/metrics}/other"
            kill -TERM $pid; wait $pid; echo "exit $?"
            """, env: env)
        #expect(r.lines == ["promtool ok", "msg_messages{status=\"sent\"} 1", "msg_messages{status=\"sent\"} 2", "404", "exit 0"],
                "\(r.out) \(r.err)")
    }

    /// `listen --metrics` serves the listener's connections and the records it
    /// took, counted as senders deliver.
    @Test func aListenerServesItsMetrics() throws {
        let s = try Sandbox()
        let env = ["MSG_PLUGIN_PATH": try webServerPlugin()]
        let r = try s.sh("""
            msg listen tcp://127.0.0.1:0 --metrics 127.0.0.1:0 2> err & pid=$!
            for i in $(seq 200); do grep -q 'metrics at' err && break; sleep 0.05; done
            url=$(sed -n 's/^msg: metrics at \\(http:[^ ]*\\).*/\\1/p' err)
            tcp=$(sed -n 's/^msg: listening on \\(tcp:[^,]*\\),.*/\\1/p' err)
            seq 3 | awk '{printf "{\\"to\\":\\"u%d\\",\\"body\\":\\"b\\"}\\n", $1}' | msg compose --enqueue > /dev/null
            msg flush --transport "$tcp" > /dev/null
            curl -s "$url" > m.txt
            promtool check metrics < m.txt && echo promtool ok
            grep -E '^msg_listener_(connections_accepted_total|records_received_total)' m.txt
            kill -TERM $pid; wait $pid; echo "exit $?"
            """, env: env)
        #expect(r.lines == ["promtool ok", "msg_listener_connections_accepted_total 1",
                            "msg_listener_records_received_total{outcome=\"delivered\"} 3",
                            "msg_listener_records_received_total{outcome=\"failed\"} 0", "exit 0"], "\(r.out) \(r.err)")
    }

    /// One idle client cannot blind the endpoint (#33): with 300 connections that
    /// sent half a request and one sending a 1 MiB header, a scrape is answered at
    /// once; the large header gets 400 (past the HTTP parser's limits).
    @Test func idleClientsDoNotDelayAScrape() throws {
        let s = try Sandbox()
        let env = ["MSG_PLUGIN_PATH": try webServerPlugin()]
        _ = try s.file("abuse.py", """
            import socket, subprocess, sys, time
            host, port, url = sys.argv[1], int(sys.argv[2]), sys.argv[3]
            socket.setdefaulttimeout(5)  # a server that stops accepting fails the test, not hangs it
            idle = []
            for _ in range(300):
                c = socket.create_connection((host, port)); c.sendall(b"GET /met"); idle.append(c)
            big = socket.create_connection((host, port))
            big.settimeout(5)
            try:
                big.sendall(b"GET /metrics HTTP/1.1\\r\\nX-Big: " + b"a" * (1 << 20))
            except OSError:
                pass
            start = time.monotonic()
            code = subprocess.run(["curl", "-s", "-o", "scrape.txt", "-w", "%{http_code}", "--max-time", "3", url], capture_output=True, text=True).stdout
            print(code, "fast" if time.monotonic() - start < 1 else "slow")
            try:
                print(big.recv(64).split(b"\\r\\n")[0].decode())
            except OSError as e:
                print("no answer", e)
            print(sum(1 for c in idle if c.fileno() >= 0))
            """)
        let r = try s.sh("""
            msg flush --watch --metrics 127.0.0.1:0 --transport stdout: > out 2> err < /dev/null & pid=$!
            for i in $(seq 200); do grep -q 'metrics at' err && break; sleep 0.05; done
            url=$(sed -n 's/^msg: metrics at \\(http:[^ ]*\\).*/\\1/p' err)
            hostport=${url#http://}; hostport=${hostport%/metrics}
            python3 abuse.py "${hostport%:*}" "${hostport#*:}" "$url"
            grep -c '^msg_messages{status="queued"} 0' scrape.txt
            kill -TERM $pid; wait $pid; echo "exit $?"
            """, env: env)
        #expect(r.lines == ["200 fast", "HTTP/1.1 400 Bad Request", "300", "1", "exit 0"], "\(r.out) \(r.err)")
    }

    /// Where scripts/test built the web server plugin `--metrics` serves on.
    func webServerPlugin() throws -> String {
        guard let plugins = ProcessInfo.processInfo.environment["MSG_TEST_NETWORK_PLUGINS"] else {
            Issue.record("--metrics needs the web server plugin scripts/test builds (MSG_TEST_NETWORK_PLUGINS); run scripts/test")
            throw MsgError(.config, "no network plugins")
        }
        return plugins
    }
}
