import Foundation
import MsgKit
import MsgKitTesting
import Testing

/// exec: and http:// through the real binary, as users run them: exit codes,
/// what stays queued, and a flush killed in the middle of 2,000 requests.
@Suite(.timeLimit(.minutes(5))) struct DestinationTransportTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized.path

    /// The directory scripts/test builds the http:// plugin into.
    func networkPlugins() throws -> String {
        guard let plugins = ProcessInfo.processInfo.environment["MSG_TEST_NETWORK_PLUGINS"] else {
            Issue.record("the http:// tests need the plugin scripts/test builds (MSG_TEST_NETWORK_PLUGINS); run scripts/test")
            throw MsgError(.config, "no network plugins")
        }
        return plugins
    }

    func compose(_ s: Sandbox, _ n: Int) throws {
        let r = try s.sh("seq \(n) | awk '{printf \"{\\\"to\\\":\\\"u%d@example.com\\\",\\\"body\\\":\\\"m%d\\\"}\\n\", $1, $1}' | msg compose --enqueue | wc -l")
        #expect(r.out == "\(n)\n", "\(r.err)")
    }

    @Test func execExitCodesAndWhatStaysQueued() throws {
        let s = try Sandbox()
        try compose(s, 3)
        _ = try s.file("deliver", """
            #!/bin/sh
            case "$MSG_TO" in u1@*) exit 0;; u2@*) echo "mailbox busy" >&2; exit 75;; *) echo "no such user" >&2; exit 67;; esac
            """)
        let r = try s.sh("chmod +x deliver; msg flush --transport \"exec:$PWD/deliver\" > out; echo $?; msg queue ls --format csv | cut -d, -f2,3 | sort")
        #expect(r.lines.first == "1", "a message became dead: exit 1; \(r.err)")
        #expect(r.err.contains("1 sent, 1 deferred for a later retry, 1 dead"), "\(r.err)")
        let show = try s.sh("msg queue ls --status dead --history | tr -d '\\n'")
        #expect(show.out.contains("\"code\":\"rejected\",\"message\":\"no such user\""), "\(show.out)")

        // A command that is not there stops the run (78) and sends nothing: every
        // message is still due afterwards.
        let typo = try s.sh("""
            msg compose --to u4@example.com --body m4 --enqueue > /dev/null
            msg flush --transport 'exec:/bin/sh -c "sendmial -i"'; echo $?; msg queue count --status queued
            """)
        #expect(typo.lines == ["78", "1"], "\(typo.out) \(typo.err)")
        #expect(typo.err.contains("sendmial"), "the shell's error names the command: \(typo.err)")
    }

    /// The issue's kill test: 2,000 messages to a server that deduplicates by
    /// Idempotency-Key; msg killed with SIGKILL while requests are in flight, then
    /// recover and flush: every id applied exactly once, every message `sent`.
    @Test func killedMidFlushOverHTTPThenRecoveredAppliesEachOnce() throws {
        let plugins = try networkPlugins()
        let s = try Sandbox()
        try compose(s, 2000)
        let server = TestProcess()
        server.executableURL = URL(fileURLWithPath: Self.repository + "/scripts/webhook-server")
        server.arguments = ["--log", s.home + "/server.ndjson"]
        let out = Pipe()
        server.standardOutput = out
        try server.run()
        defer { kill(server.processIdentifier, SIGKILL); try? server.wait() }
        var line = Data()
        while let b = try out.fileHandleForReading.read(upToCount: 1), !b.isEmpty, b != Data([10]) { line += b }
        let port = String(decoding: line, as: UTF8.self).replacingOccurrences(of: "listening on ", with: "")
        let url = "http://127.0.0.1:\(port)/slow/1?concurrency=8&lookup=http://127.0.0.1:\(port)/applied/%7Bid%7D"
        let env = ["MSG_PLUGIN_PATH": plugins, "MSG_TRANSPORT": url]
        // Killed from outside once 700 requests reached the server: 8 are in flight.
        // (Looked at every 5 ms, and no longer once the flush has ended by itself.)
        let killed = try s.sh("""
            msg flush > /dev/null 2>&1 &
            pid=$!
            until [ "$(wc -l < server.ndjson 2>/dev/null || echo 0)" -ge 700 ] || ! kill -0 $pid 2>/dev/null; do sleep 0.005; done
            kill -9 $pid; wait $pid; echo $?
            msg queue count --status sending
            """, env: env)
        #expect(killed.lines.first == "137", "\(killed.out) \(killed.err)")
        #expect(Int(killed.lines.last ?? "") ?? 0 > 0, "the kill left a batch sending: \(killed.out)")
        let after = try s.sh("msg recover --stale-after 0s -v > /dev/null; msg flush > /dev/null; echo $?; msg queue count --status sent", env: env)
        #expect(after.lines == ["0", "2000"], "\(after.out) \(after.err)")
        #expect(after.err.contains("already delivered"), "recover asked the lookup URL: \(after.err)")

        let log = try String(contentsOfFile: s.home + "/server.ndjson", encoding: .utf8).split(separator: "\n")
        var applied: [String: Int] = [:]
        for entry in log {
            let object = try JSONSerialization.jsonObject(with: Data(entry.utf8)) as? [String: Any] ?? [:]
            if object["applied"] as? Bool == true { applied[object["key"] as? String ?? "", default: 0] += 1 }
        }
        let ids = Set(try s.sh("msg queue ls --format csv | tail -n +2 | cut -d, -f1").lines)
        #expect(ids.count == 2000)
        #expect(Set(applied.keys) == ids, "every id applied: \(ids.subtracting(applied.keys).count) missing")
        #expect(applied.values.allSatisfy { $0 == 1 }, "an id applied twice")
        #expect(log.count >= 2000, "requests: \(log.count)")
    }
}
