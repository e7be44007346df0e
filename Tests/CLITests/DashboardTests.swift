import Foundation
import MsgKit
import Testing

/// `msg web` (#67) through the real binary and a real browser: Debian's chromium,
/// headless, driven by selenium through chromium-driver (scripts/browser-check),
/// and the Grafana dashboard and alert rules msg installs, checked by promtool and
/// against what `msg metrics` prints.
@Suite(.timeLimit(.minutes(3))) struct DashboardTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized.path

    /// Where scripts/test built the web server plugin.
    func plugins() throws -> [String: String] {
        guard let plugins = ProcessInfo.processInfo.environment["MSG_TEST_NETWORK_PLUGINS"] else {
            Issue.record("msg web needs the web server plugin scripts/test builds (MSG_TEST_NETWORK_PLUGINS); run scripts/test")
            throw MsgError(.config, "no network plugins")
        }
        return ["MSG_PLUGIN_PATH": plugins]
    }

    /// The shell lines that start `msg web ARGS` in the background (its pid in $web,
    /// its address in $url once it listens, its stderr in web.err).
    static func start(_ arguments: String) -> String {
        """

        msg web \(arguments) 2> web.err & web=$!
        for i in $(seq 300); do grep -q 'dashboard of' web.err && break; kill -0 $web 2>/dev/null || break; sleep 0.05; done
        url=$(grep -o 'https\\?://[^/ ]*' web.err | head -1)
        """
    }

    /// Three dead messages whose body, header, recipient and error are script and
    /// markup, and one queued to another destination.
    func hostileStore(_ s: Sandbox, _ env: [String: String]) throws {
        _ = try s.file("deliver", "#!/bin/sh\necho '<script>window.pwned=4</script>' >&2; exit 67\n")
        let r = try s.sh(#"""
            chmod +x deliver
            printf '%s\n' '{"to":"alice@example.com","body":"<script>window.pwned=1</script>","headers":{"X-Evil":"<img src=x onerror=window.pwned=2>"}}' \
                '{"to":"javascript:window.pwned=3","body":"b"}' '{"to":"alice@example.com","body":"plain"}' | msg compose --enqueue > /dev/null
            msg flush --transport "exec:$PWD/deliver" > /dev/null 2>&1
            msg compose --to bob@example.com --body later --enqueue > /dev/null
            msg queue count --status dead
            """#, env: env)
        #expect(r.out == "3\n", "\(r.err)")
    }

    /// The issue's browser test: each page opened, the messages filtered, one opened
    /// and retried with a reason from the page; every hostile string shows as text
    /// and runs nothing; a POST without the token or from another origin is refused.
    @Test func aBrowserShowsEveryPageRetriesADeadOneAndRunsNothing() throws {
        let env = try plugins()
        let s = try Sandbox()
        try hostileStore(s, env)
        let shots = ProcessInfo.processInfo.environment["MSG_TEST_SCREENSHOTS"] ?? s.home + "/shots"
        let r = try s.sh(Self.start("--listen 127.0.0.1:0 --allow-actions") + """

            mkdir -p '\(shots)'
            '\(Self.repository)/scripts/browser-check' "$url" '\(shots)'; echo "check $?"
            kill -TERM $web; wait $web; echo "exit $?"
            msg queue ls --history | jq -r 'select(.body == "<script>window.pwned=1</script>") | .status, (.history[-1] | .event + " " + .reason)'
            """, env: env, timeout: 150)
        #expect(r.lines == ["browser-check: every page shown, filtered, retried; nothing ran", "check 0", "exit 0", "queued", "redriven fixed the mailbox"], "\(r.out) \(r.err)")
        for page in ["overview", "destinations", "messages", "message", "dead", "ledger", "phone"] {
            let size = (try? FileManager.default.attributesOfItem(atPath: "\(shots)/\(page).png")[.size] as? Int) ?? 0
            #expect(size > 10_000, "the screenshot of \(page) was saved")
        }
        let said = try String(contentsOfFile: s.home + "/web.err", encoding: .utf8)
        #expect(said.contains("web: retry ") && said.contains("(fixed the mailbox)"), "the action is said on stderr: \(said)")
    }

    /// Without --allow-actions the store is opened for reading, the pages offer no
    /// action and a POST is refused, even with the page's token.
    @Test func readOnlyByDefault() throws {
        let env = try plugins()
        let s = try Sandbox()
        try hostileStore(s, env)
        let r = try s.sh(Self.start("--listen 127.0.0.1:0") + """

            id=$(msg queue ls --status dead | head -1 | jq -r .id)
            curl -s "$url/messages/$id" > page.html
            grep -c '<form method="post"' page.html
            curl -s -o /dev/null -w '%{http_code}\\n' -X POST --data 'reason=x' "$url/messages/$id/retry"
            curl -s -D - "$url/" -o /dev/null | grep -i '^content-security-policy' | grep -c "script-src 'self'"
            kill -TERM $web; wait $web; echo "exit $?"
            msg queue count --status dead
            """, env: env)
        #expect(r.lines == ["0", "403", "1", "exit 0", "3"], "\(r.out) \(r.err)")
    }

    /// Beyond loopback it refuses to start without a token file or client
    /// certificates; with an owner-only token file every request must carry it.
    @Test func beyondLoopbackNeedsATokenAndEveryRequestCarriesIt() throws {
        let env = try plugins()
        let s = try Sandbox()
        let r = try s.sh("""
            msg web --listen 0.0.0.0:0; echo "open $?"
            echo s3cret > token; chmod 0644 token
            msg web --listen 0.0.0.0:0 --token-file token; echo "readable $?"
            chmod 0600 token
            """ + Self.start("--listen 0.0.0.0:0 --token-file token") + """

            port=${url##*:}
            curl -s -o /dev/null -w '%{http_code}\\n' "http://127.0.0.1:$port/"
            curl -s -o /dev/null -w '%{http_code}\\n' -u anyone:wrong "http://127.0.0.1:$port/"
            curl -s -o /dev/null -w '%{http_code}\\n' -u anyone:s3cret "http://127.0.0.1:$port/"
            curl -s -o /dev/null -w '%{http_code}\\n' -H 'Authorization: Bearer s3cret' "http://127.0.0.1:$port/destinations"
            kill -TERM $web; wait $web; echo "exit $?"
            """, env: env)
        #expect(r.lines == ["open 78", "readable 78", "401", "401", "200", "200", "exit 0"], "\(r.out) \(r.err)")
        #expect(r.err.contains("can be reached from other hosts: give --token-file, or https:// with client_ca="), "\(r.err)")
        #expect(r.err.contains("can be read by others; chmod 0600 it"), "\(r.err)")
    }

    /// The messages page pages by cursor: 120 messages in three pages of 50, 50 and
    /// 20, each id once, in FIFO order.
    @Test func messagesArePagedByCursor() throws {
        let env = try plugins()
        let s = try Sandbox()
        let r = try s.sh("""
            seq 120 | awk '{printf "{\\"to\\":\\"u%d@x\\",\\"body\\":\\"m%d\\"}\\n", $1 % 7, $1}' | msg compose --enqueue > /dev/null
            """ + Self.start("--listen 127.0.0.1:0") + """

            next="$url/messages?status=queued"
            : > seen
            while [ -n "$next" ]; do
                curl -s "$next" > page.html
                grep -o 'class="id">[^<]*' page.html | cut -d'>' -f2 > ids; wc -l < ids; cat ids >> seen
                link=$(grep -o '<a href="/messages?[^"]*">Next page' page.html | sed 's/<a href="\\([^"]*\\)".*/\\1/; s/&amp;/\\&/g')
                next=${link:+$url$link}
            done
            sort -u seen | wc -l
            msg queue ls | jq -r .id > fifo; cmp -s seen fifo && echo "fifo order"
            kill -TERM $web; wait $web
            """, env: env)
        #expect(r.lines == ["50", "50", "20", "120", "fifo order"], "\(r.out) \(r.err)")
    }

    /// The alert rules pass promtool's check and its unit test (each alert fires on
    /// the series it is for), and every series the Grafana dashboard and the rules
    /// ask for is one msg prints.
    @Test func grafanaAndAlertRulesNameWhatMsgPrints() throws {
        let env = try plugins()
        let s = try Sandbox()
        let rules = Self.repository + "/share/msg/prometheus/msg-alerts.yml"
        _ = try s.file("alerts-test.yml", """
            rule_files: ['\(rules)']
            evaluation_interval: 1m
            tests:
              - interval: 1m
                input_series:
                  - series: 'msg_queue_lag_seconds{instance="h"}'
                    values: '0 400x20'
                  - series: 'msg_destination_failures_total{instance="h",destination="down@x"}'
                    values: '0+3x90'
                  - series: 'msg_destination_deliveries_total{instance="h",destination="down@x"}'
                    values: '5x90'
                  - series: 'msg_destination_failures_total{instance="h",destination="fine@x"}'
                    values: '0+1x90'
                  - series: 'msg_destination_deliveries_total{instance="h",destination="fine@x"}'
                    values: '0+10x90'
                  - series: 'msg_messages{instance="h",status="dead"}'
                    values: '0 0 0 5x60'
                  - series: 'msg_destinations{instance="h",state="open"}'
                    values: '1x30'
                  - series: 'msg_store_up{instance="h"}'
                    values: '1 0x10'
                alert_rule_test:
                  - eval_time: 12m
                    alertname: MsgQueueLagHigh
                    exp_alerts: [{exp_labels: {severity: warning, instance: h}, exp_annotations: {summary: 'msg queue lag is 6m 40s on h', description: 'A message that is due has waited more than 5 minutes: is msg flush --watch running, and can it reach its transports? msg destinations tells which destination holds it.'}}]
                  - eval_time: 80m
                    alertname: MsgDestinationFailing
                    exp_alerts: [{exp_labels: {severity: warning, instance: h, destination: down@x}, exp_annotations: {summary: 'msg cannot deliver to down@x on h', description: 'Every attempt to down@x has failed for an hour. msg web''s destinations page, or msg destinations, shows its last error and breaker.'}}]
                  - eval_time: 12m
                    alertname: MsgBreakerOpen
                    exp_alerts: [{exp_labels: {severity: warning, instance: h}, exp_annotations: {summary: '1 destinations have an open breaker on h', description: 'msg stopped trying these destinations after failures in a row; it probes them after the cool-down. msg destinations names them.'}}]
                  - eval_time: 8m
                    alertname: MsgStoreDown
                    exp_alerts: [{exp_labels: {severity: critical, instance: h}, exp_annotations: {summary: 'msg cannot reach its store on h', description: 'flush --watch rides out the outage and says so on stderr; nothing is sent until the store answers.'}}]
            """)
        let r = try s.sh("""
            promtool check rules '\(rules)' > /dev/null && echo "rules ok"
            promtool test rules alerts-test.yml > test.out 2>&1 && echo "alerts fire" || cat test.out >&2
            msg compose --to a@x --body one --enqueue > /dev/null; msg flush --transport stdout: > /dev/null
            msg compose --to b@x --body two --enqueue > /dev/null; msg flush --transport 'exec:false' > /dev/null 2>&1
            msg destinations suspend c@x --reason 'a state to show' > /dev/null
            { msg metrics; echo msg_store_up 1; } | grep -v '^#' | sed 's/[{ ].*//' | sort -u > printed
            python3 - '\(Self.repository)/share/msg/grafana/msg.json' '\(rules)' <<'EOF'
            import json, re, sys
            printed = set(open("printed").read().split())
            dashboard = json.load(open(sys.argv[1]))
            asked = set()
            for p in dashboard["panels"]:
                for t in p["targets"]:
                    asked |= set(re.findall(r"\\bmsg_[a-z_]+", t["expr"]))
            rules = set(re.findall(r"\\bmsg_[a-z_]+", open(sys.argv[2]).read()))
            print(len(dashboard["panels"]), "panels")
            print("missing:", sorted((asked | rules) - printed))
            print("every family shown:", sorted({n for n in printed if not re.search("_(bucket|sum|count)$", n)} - asked))
            EOF
            """, env: env)
        #expect(r.lines == ["rules ok", "alerts fire", "12 panels", "missing: []", "every family shown: []"], "\(r.out) \(r.err)")
    }
}
