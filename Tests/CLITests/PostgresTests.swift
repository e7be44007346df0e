import Foundation
import MsgKit
import Testing

/// The postgres:// store through the real binary: several workers on one queue, a
/// worker killed, the server restarted. Needs the throw-away server and the plugin
/// that `scripts/test` builds and starts; without them these tests fail, naming
/// what to run. One at a time: one of them restarts the server.
@Suite(.serialized, .timeLimit(.minutes(5))) struct PostgresTests {
    /// What `scripts/test` exports for these tests.
    struct Server {
        let url: String
        let plugins: String
        let control: String
        let directory: String
        let password: String
        /// The CA of the server's certificate, which names only IP:127.0.0.1.
        let ca: String

        init() throws {
            let env = ProcessInfo.processInfo.environment
            guard let url = env["MSG_TEST_POSTGRES"], let plugins = env["MSG_TEST_NETWORK_PLUGINS"],
                  let control = env["MSG_TEST_POSTGRES_CTL"], let directory = env["MSG_TEST_POSTGRES_DIR"],
                  let password = env["PGPASSWORD"], let ca = env["MSG_TEST_POSTGRES_CA"] else {
                Issue.record("the postgres:// tests need the server and plugin scripts/test starts and builds (MSG_TEST_POSTGRES…); run scripts/test")
                throw MsgError(.config, "no test server")
            }
            (self.url, self.plugins, self.control, self.directory, self.password, self.ca) = (url, plugins, control, directory, password, ca)
        }

        /// The environment for msg on a fresh queue (its own PostgreSQL schema);
        /// `verified`: over sslmode=verify-full, msg's own TLS connection.
        func queue(verified: Bool = false) -> [String: String] {
            var env = ["MSG_STORE": "\(url)?schema=cli_\(UUID().uuidString.prefix(8).lowercased())",
                       "MSG_PLUGIN_PATH": plugins, "PGPASSWORD": password]
            if verified {
                env["MSG_STORE", default: ""] += "&sslmode=verify-full"
                env["PGSSLROOTCERT"] = ca
            }
            return env
        }
    }

    func compose(_ s: Sandbox, _ n: Int, _ env: [String: String]) throws {
        let r = try s.sh("seq \(n) | awk '{printf \"{\\\"to\\\":\\\"u%d\\\",\\\"body\\\":\\\"m%d\\\"}\\n\", $1, $1}' | msg compose --enqueue | wc -l", env: env)
        #expect(r.out == "\(n)\n", "\(r.err)")
    }

    /// Every message is `sent` and in the drop directory exactly once.
    func expectEachDeliveredOnce(_ s: Sandbox, _ n: Int, _ env: [String: String], _ label: String) throws {
        let counts = try s.sh("msg queue count; msg queue count --status sent", env: env)
        #expect(counts.lines == ["\(n)", "\(n)"], "\(label): \(counts.out) \(counts.err)")
        let files = try FileManager.default.contentsOfDirectory(atPath: s.home + "/outbox/new").filter { $0.hasSuffix(".json") }
        #expect(files.count == n, "\(label): \(files.count) files for \(n) messages")
        let stored = Set(ids(try s.sh("msg queue ls", env: env).out))
        #expect(Set(files.map { String($0.dropLast(5)) }) == stored, "\(label): the drop and the queue disagree")
    }

    /// The config file's retry policy is every worker's: two `flush --watch` on one
    /// PostgreSQL queue, a destination always failing, `max_attempts = 3` from the
    /// config: every message is dead at its third attempt, never a fourth, and what
    /// it was promised is in its record.
    @Test func twoWatchesOnOneQueueHonourTheConfigsPolicy() throws {
        let server = try Server()
        let s = try Sandbox()
        let env = server.queue()
        try s.config("transport = exec:/bin/sh -c \"exit 75\"\nmax_attempts = 3\nbackoff_base = 10ms\nbackoff_cap = 50ms\n")
        try compose(s, 40, env)
        let r = try s.sh("""
            for w in 1 2; do msg flush --watch --breaker 0 > /dev/null 2> err$w & done
            for i in $(seq 600); do [ "$(msg queue count --status dead)" = 40 ] && break; sleep 0.05; done
            kill -TERM $(jobs -p); status=0; for job in $(jobs -p); do wait $job || status=$?; done; echo "exit $status"
            msg queue count --status dead
            msg queue ls | grep -o '"attempts":[0-9]*,' | sort | uniq -c | tr -s ' '
            msg queue ls --history | grep -c '"max_attempts":3,"give_up_at":'
            """, env: env)
        #expect(r.lines == ["exit 0", "40", " 40 \"attempts\":3,", "40"], "\(r.out) \(r.err)")
    }

    @Test func fourWorkersShareTheQueueAndDeliverEachMessageOnce() throws {
        let server = try Server()
        let s = try Sandbox()
        let env = server.queue()
        try compose(s, 4000, env)
        let r = try s.sh("""
            for w in 1 2 3 4; do msg flush --batch 64 > out$w 2> err$w & done
            status=0; for job in $(jobs -p); do wait $job || status=$?; done; echo "exit $status"
            cat out1 out2 out3 out4 | wc -l
            cat out1 out2 out3 out4 | cut -c8-43 | sort | uniq -d | wc -l
            for w in 1 2 3 4; do [ -s out$w ] && echo worked; done | wc -l
            cat err1 err2 err3 err4
            """, env: env)
        #expect(r.lines.prefix(3) == ["exit 0", "4000", "0"], "\(r.out) \(r.err)")
        #expect((Int(r.lines.count > 3 ? r.lines[3] : "") ?? 0) >= 2, "the work was shared: \(r.out)")
        try expectEachDeliveredOnce(s, 4000, env, "four workers")
    }

    /// Four flush processes, on one queue in PostgreSQL, keep each destination in
    /// FIFO order with one message in flight (the stdout mock's trace says).
    @Test func fourWorkersKeepEachDestinationInOrder() throws {
        let server = try Server()
        let s = try Sandbox()
        let env = server.queue()
        let made = try s.sh("seq 0 1599 | awk '{printf \"{\\\"to\\\":\\\"d%d\\\",\\\"body\\\":\\\"m%d\\\"}\\n\", $1 % 8, $1}' | msg compose --enqueue", env: env)
        var order: [String: [String]] = [:]
        for m in try records(made.out) { order[m.to, default: []].append(m.id) }
        #expect(order.count == 8 && order.values.allSatisfy { $0.count == 200 }, "\(made.err)")
        let mock = "stdout:?fd=3&latency=1ms&fail=0.1&seed=9&trace=\(s.home)/trace"
        let r = try s.sh("""
            for w in 1 2 3 4; do msg flush --batch 16 --concurrency 8 --breaker 0 --transport '\(mock)' 3>/dev/null > out$w 2> err$w & done
            for job in $(jobs -p); do wait $job; done
            cat out1 out2 out3 out4 | wc -l
            for w in 1 2 3 4; do [ -s out$w ] && echo worked; done | wc -l
            """, env: env)
        #expect(r.lines.first == "1600", "\(r.out) \(r.err)")
        let trace = DeliveryTraceFile(try String(contentsOfFile: s.home + "/trace", encoding: .utf8))
        #expect(trace.maxInFlightPerKey == 1, "a destination never had two messages in flight, across four processes")
        #expect(trace.outOfOrder(order).isEmpty, "first attempts in FIFO order: \(trace.outOfOrder(order))")
    }

    /// Forty tenants, as recipients or as a header (`--key header:x-tenant`, the
    /// recipients all different): claims hold them, so with four processes a tenant
    /// is in flight in one process at a time. While they run, the queue is looked
    /// at again and again, each look one snapshot: no tenant ever has records
    /// `sending` under the leases of two processes. (The trace of the mock cannot
    /// tell: a process may hold a tenant's messages for a while before it sends them.)
    @Test(arguments: ["to", "header"]) func fourWorkersNeverHaveOneTenantInFlightAtOnce(key: String) throws {
        let server = try Server()
        let s = try Sandbox()
        let env = server.queue()
        let schema = String(env["MSG_STORE"]!.split(separator: "=").last!)
        let to = key == "to" ? "t%d" : "u%d"
        let made = try s.sh("""
            seq 0 1599 | awk '{printf "{\\"to\\":\\"\(to)\\",\\"body\\":\\"m%d\\",\\"headers\\":{\\"x-tenant\\":\\"t%d\\"}}\\n", \(key == "to" ? "$1 % 40" : "$1"), $1, $1 % 40}' \
              | msg compose --enqueue | wc -l
            """, env: env)
        #expect(made.lines == ["1600"], "\(made.err)")
        let r = try s.sh("""
            for w in 1 2 3 4; do msg flush \(key == "to" ? "" : "--key header:x-tenant") --batch 16 --concurrency 8 --transport 'stdout:?fd=3&latency=20ms' 3>/dev/null > out$w 2> err$w & done
            while [ -n "$(jobs -r)" ]; do
              psql -Atq "$MSG_TEST_POSTGRES" -c "SELECT count(*) FROM (SELECT record::json->'headers'->>'x-tenant' FROM \(schema).messages \
                WHERE status = 'sending' GROUP BY 1 HAVING count(DISTINCT record::json->'lease'->>'pid') > 1) AS shared" >> looks
            done
            wait
            cat out1 out2 out3 out4 | wc -l
            for w in 1 2 3 4; do [ -s out$w ] && echo worked; done | wc -l
            wc -l < looks; sort -u looks
            """, env: env.merging(["MSG_TEST_POSTGRES": server.url]) { $1 })
        #expect(r.lines.first == "1600", "\(r.out) \(r.err)")
        #expect((Int(r.lines.count > 1 ? r.lines[1] : "") ?? 0) >= 2, "the work was shared: \(r.out)")
        #expect((Int(r.lines.count > 2 ? r.lines[2] : "") ?? 0) >= 5, "looked a few times: \(r.out)")
        #expect(Array(r.lines.dropFirst(3)) == ["0"], "never a tenant sending in two processes at once: \(r.out)")
    }

    @Test func aWorkerKilledMidFlushIsRecoveredFromAnotherProcess() throws {
        let server = try Server()
        let s = try Sandbox()
        let env = server.queue()
        try compose(s, 3000, env)
        // Worker a is killed once it has reported 300 messages, while worker b goes
        // on; recover runs beside b, and must leave b's live leases alone.
        let r = try s.sh("""
            msg flush --batch 32 > a & pa=$!
            msg flush --batch 32 > b & pb=$!
            until [ "$(wc -l < a)" -ge 300 ] || ! kill -0 $pa 2>/dev/null; do sleep 0.01; done
            kill -9 $pa; wait $pa; echo "a $?"
            msg recover --stale-after 0s > recovered; echo "recover $?"
            wait $pb; echo "b $?"
            msg recover --stale-after 0s >> recovered; msg flush > c; echo "again $?"
            cat a b c | cut -c8-43 | sort | uniq -d | wc -l
            """, env: env)
        #expect(r.lines == ["a 137", "recover 0", "b 0", "again 0", "0"], "\(r.out) \(r.err)")
        try expectEachDeliveredOnce(s, 3000, env, "after the kill")
        let history = try records(try s.sh("msg queue ls --history", env: env).out)
        let recovered = history.filter { $0.history.contains { $0.event == "recovered" } }
        #expect(recovered.allSatisfy { $0.history.filter { $0.event == "attempt" }.count <= 2 }, "a message was attempted more than twice")
    }

    @Test func aServerRestartDuringAFlushFailsClearlyAndLosesNothing() throws {
        let server = try Server()
        let s = try Sandbox()
        let env = server.queue()
        try compose(s, 5000, env)
        let r = try s.sh("""
            msg flush --batch 32 > a 2> err & p=$!
            until [ "$(wc -l < a)" -ge 200 ] || ! kill -0 $p 2>/dev/null; do sleep 0.01; done
            "$MSG_TEST_POSTGRES_CTL" restart "$MSG_TEST_POSTGRES_DIR"
            wait $p; echo "flush $?"
            cat err
            """, env: env.merging(["MSG_TEST_POSTGRES_CTL": server.control, "MSG_TEST_POSTGRES_DIR": server.directory]) { $1 })
        let status = r.lines.first ?? ""
        // The server restarting is a temporary failure (75), not damage (74).
        #expect(status == "flush 75", "\(r.out) \(r.err)")
        let said = r.lines.dropFirst().filter { $0.hasPrefix("msg: ") }
        #expect(said.count == 1 && said[0].contains("127.0.0.1") && !said[0].contains("PSQLError"), "one clear line naming the server: \(r.out)")
        let again = try s.sh("msg recover --stale-after 0s > /dev/null; msg flush > b; echo $?; cat a b | cut -c8-43 | sort | uniq -d | wc -l", env: env)
        #expect(again.lines == ["0", "0"], "\(again.out) \(again.err)")
        try expectEachDeliveredOnce(s, 5000, env, "after the restart")
    }

    /// `flush --watch` rides out a server that goes away in the middle of a flush:
    /// eight seconds down (`pg_ctl stop -m fast`), then a kill -9 of the postmaster.
    /// It stays alive, says each outage once when it starts and once when it ends,
    /// serves `msg_store_up 0` meanwhile, and sends every message once, those added
    /// after each outage too; a one-shot command during the outage exits 75; SIGTERM
    /// during a third outage ends the watch (exit 0), saying so. Over
    /// sslmode=verify-full: each reconnection is msg's own checked TLS connection.
    @Test func aWatchRidesOutAServerThatGoesAway() throws {
        let server = try Server()
        let s = try Sandbox()
        let env = server.queue(verified: true).merging(["CTL": server.control, "DIR": server.directory]) { $1 }
        try compose(s, 2000, env)
        let r = try s.sh("""
            sent() { msg queue count --status sent 2>/dev/null || echo -1; }
            until_sent() {
                for i in $(seq 1200); do [ "$(sent)" = "$1" ] && return 0; kill -0 $p 2>/dev/null || break; sleep 0.05; done
                echo "only $(sent) of $1 sent"
            }
            msg flush --watch --batch 16 --metrics 127.0.0.1:0 > a 2> err & p=$!
            until [ "$(wc -l < a)" -ge 200 ] || ! kill -0 $p 2>/dev/null; do sleep 0.01; done
            "$CTL" down "$DIR"
            for i in $(seq 200); do grep -q 'waits for the store' err && break; sleep 0.05; done
            url=$(sed -n 's/^msg: metrics at \\(http:[^ ]*\\).*/\\1/p' err)
            curl -s "$url" | grep '^msg_store_up'
            msg queue count > /dev/null 2> count.err; echo "count $?"
            sleep 8
            "$CTL" up "$DIR"
            until_sent 2000
            seq 100 | awk '{printf "{\\"to\\":\\"v%d\\",\\"body\\":\\"after %d\\"}\\n", $1, $1}' | msg compose --enqueue > /dev/null
            until_sent 2100
            seq 2000 | awk '{printf "{\\"to\\":\\"w%d\\",\\"body\\":\\"second %d\\"}\\n", $1, $1}' | msg compose --enqueue > /dev/null
            until [ "$(wc -l < a)" -ge 2300 ] || ! kill -0 $p 2>/dev/null; do sleep 0.01; done
            "$CTL" crash "$DIR"
            "$CTL" up "$DIR"
            until_sent 4100
            curl -s "$url" | grep '^msg_store_up'
            kill -0 $p && echo alive
            "$CTL" down "$DIR"
            for i in $(seq 400); do [ "$(grep -c 'waits for the store' err)" = 3 ] && break; sleep 0.05; done
            kill -TERM $p; wait $p; echo "exit $?"
            "$CTL" up "$DIR"
            grep -c 'waits for the store' err
            grep -c 'reachable again after' err
            grep -c 'stopped by SIGTERM while waiting for the store' err
            cut -c8-43 a | sort | uniq -d | wc -l
            """, env: env)
        let said = (try? String(contentsOfFile: s.home + "/err", encoding: .utf8)) ?? ""
        #expect(r.lines == ["msg_store_up 0", "count 75", "msg_store_up 1", "alive", "exit 0", "3", "2", "1", "0"], "\(r.out) \(r.err) \(said)")
        let countErr = try String(contentsOfFile: s.home + "/count.err", encoding: .utf8)
        #expect(countErr.split(separator: "\n").count == 1 && countErr.contains("127.0.0.1"), "one line naming the server: \(countErr)")
        let history = try records(try s.sh("msg queue ls --history", env: env).out)
        #expect(history.count == 4100 && history.allSatisfy { $0.status == .sent }, "every message sent")
        #expect(history.allSatisfy { $0.history.filter { $0.status == .sent }.count == 1 }, "each sent once")
    }

    @Test func thePasswordComesFromTheEnvironmentOrAPassFileNeverTheURL() throws {
        let server = try Server()
        let s = try Sandbox()
        var env = server.queue()
        let store = env["MSG_STORE"]!
        env["PGPASSWORD"] = nil
        let port = store.split(separator: ":")[2].split(separator: "/")[0]
        let pgpass = try s.file("pgpass", "127.0.0.1:\(port):msgtest:msg:\(server.password)\n")
        chmod(pgpass, 0o600)
        // queue add makes the queue (a fresh schema); count only reads it.
        let viaFile = try s.sh("unset PGPASSWORD; export PGPASSFILE=\(pgpass); msg queue add < /dev/null && msg queue count", env: env)
        #expect(viaFile.status == 0 && viaFile.out == "0\n", "\(viaFile.err)")
        chmod(pgpass, 0o644)
        let open = try s.sh("unset PGPASSWORD; PGPASSFILE=\(pgpass) msg queue count", env: env)
        #expect(open.status == 78 && open.err.contains("chmod 0600"), "\(open.err)")
        let wrong = try s.sh("PGPASSWORD=wrong msg queue count", env: env)
        #expect(wrong.status == 78 && wrong.err.contains("password authentication failed"), "\(wrong.err)")
        let inURL = store.replacingOccurrences(of: "postgres://msg@", with: "postgres://msg:\(server.password)@")
        let refused = try s.sh("msg queue count --store '\(inURL)'", env: env)
        #expect(refused.status == 78 && !refused.err.contains(server.password), "\(refused.err)")
    }

    @Test func aQueueInPostgresFlushesOverTCP() throws {
        // Both plugins carry SwiftNIO; one process loads the two.
        let server = try Server()
        let s = try Sandbox()
        let env = server.queue()
        let listener = try ListenerProcess(s, ["--into", "file:\(s.home)/outbox"])
        try compose(s, 500, env)
        let r = try s.sh("msg flush --transport \(listener.url) | wc -l", env: env)
        #expect(r.out == "500\n", "\(r.err)")
        _ = listener.stop()
        try expectEachDeliveredOnce(s, 500, env, "over tcp")
    }

    /// A record edited by hand in the database stops nothing (msg-record(5), DAMAGED
    /// RECORDS): it is set aside as dead with its text kept, the rest is sent.
    @Test func aDamagedRecordInPostgresIsSetAsideAndTheRestFlows() throws {
        let server = try Server()
        let s = try Sandbox()
        let env = server.queue()
        let schema = String(env["MSG_STORE"]!.split(separator: "=").last!)
        try compose(s, 3, env)
        let r = try s.sh("""
            psql -q "\(server.url)" -c "UPDATE \(schema).messages SET record = '{broken' WHERE recipient = 'u2'"
            msg queue ls | wc -l
            msg flush > flushed; echo "flush $?"
            wc -l < flushed
            msg queue count --status sent
            msg queue ls --status dead
            """, env: env)
        #expect(Array(r.lines.prefix(4)) == ["3", "flush 1", "2", "2"], "\(r.out)\(r.err)")
        let dead = try #require(try records(r.lines.last ?? "").first)
        #expect(dead.isDamaged && dead.to == "u2" && dead.extra.first?.value.stringValue == "{broken", "\(r.out)")
        #expect(r.err.contains("is damaged: it was set aside as dead with its text kept"), "\(r.err)")
    }

    /// `msg web` on a postgres:// queue, as a host beside the workers would run it:
    /// the counts, a status's messages, a message held from the page.
    @Test func aDashboardShowsTheSharedQueue() throws {
        let server = try Server()
        let env = server.queue()
        let s = try Sandbox()
        try compose(s, 30, env)
        let r = try s.sh("""
            msg queue hold --to u7 --reason 'before the page' > /dev/null
            msg web --listen 127.0.0.1:0 --allow-actions 2> web.err & web=$!
            for i in $(seq 300); do grep -q 'dashboard of' web.err && break; kill -0 $web 2>/dev/null || break; sleep 0.05; done
            url=$(grep -o 'http://[^/ ]*' web.err | head -1)
            curl -s "$url/" | grep -o '<span class="figure">[0-9]*</span><span class="label">[a-z]*' | sed 's/<[^>]*>/ /g' | awk '$1 > 0 {print $1, $2}'
            curl -s "$url/messages?status=held" | grep -c 'class="id"'
            id=$(msg queue ls --to u8 | jq -r .id)
            token=$(curl -s "$url/messages/$id" | grep -o 'name="token" value="[0-9a-f]*"' | head -1 | cut -d'"' -f4)
            curl -s -o /dev/null -w '%{http_code}\n' -H "Origin: $url" --data "token=$token&reason=from+the+page" "$url/messages/$id/hold"
            msg queue ls --to u8 --history | jq -r '.status, .history[-1].reason'
            kill -TERM $web; wait $web; echo "exit $?"
            """, env: env)
        #expect(r.lines == ["29 queued", "1 held", "1", "303", "held", "from the page", "exit 0"], "\(r.out) \(r.err)")
    }
}
