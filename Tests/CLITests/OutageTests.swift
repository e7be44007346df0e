import Foundation
import MsgKit
import MsgKitTesting
import Testing

/// msg rides out an outage on its own (docs/DESIGN.md 6): `flush --watch` retries
/// what failed when it is due, under the config file's retry policy, whose defaults
/// last days; SIGTERM ends it with 0; and the cron lines work as cron runs them.
@Suite(.timeLimit(.minutes(3))) struct OutageTests {
    /// A command destination that is down (exit 75, EX_TEMPFAIL) until the file
    /// `up` exists, and then appends each message's id to `got`.
    func downUntilUp(_ s: Sandbox) throws -> String {
        let path = try s.file("down.sh", """
            #!/bin/sh
            [ -e "\(s.home)/up" ] || exit 75
            echo "$MSG_ID" >> "\(s.home)/got"
            """)
        chmod(path, 0o755)
        return path
    }

    func count(_ s: Sandbox, _ status: String) throws -> Int {
        Int(try s.sh("msg queue count --status \(status)").out.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// The issue's check: 50 messages to a destination that is down for a while,
    /// under `flush --watch` with a config file setting a short backoff cap: all
    /// delivered within 20 s of its recovery, each once, none dead; the watch says
    /// the failures and the recovery on stderr, and SIGTERM ends it with 0 although
    /// it deferred messages.
    @Test func aWatchRidesOutAnOutageOfACommandDestination() throws {
        let s = try Sandbox()
        try s.config("transport = exec:\(try downUntilUp(s))\nbackoff_cap = 1s\n")
        let ids = ids(try s.sh("seq 50 | sed 's/.*/{\"to\":\"ops@example.com\",\"body\":\"n&\"}/' | msg compose --enqueue").out)
        #expect(ids.count == 50)
        let (p, _, err) = try s.start(["flush", "--watch"])
        // Down a while: messages failed, and were tried again (the breaker's probes).
        let triedAgain = try eventually(within: 60) {
            try s.sh("msg queue ls --status failed | grep -c '\"attempts\":[3-9]'").out != "0\n"
        }
        #expect(triedAgain, "tried again while down")
        let up = Date()
        _ = try s.file("up", "")
        #expect(try eventually(within: 20) { try count(s, "sent") == 50 }, "all delivered within 20 s of recovery")
        let took = Date().timeIntervalSince(up)
        #expect(took < 20, "took \(took) s")
        #expect(try count(s, "dead") == 0)
        let got = try String(contentsOfFile: s.home + "/got", encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(got.sorted() == ids.sorted(), "each delivered once")
        kill(p.processIdentifier, SIGTERM)
        try p.wait()
        #expect(p.terminationReason == .exit && p.terminationStatus == 0, "SIGTERM ends a watch with 0, whatever it deferred")
        let said = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let lines = said.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("msg: destination ops@example.com: ") && $0.contains(" failed (attempt 1): remote: ") }, "\(said)")
        #expect(lines.contains { $0.hasPrefix("msg: destination ops@example.com: delivering again after ") }, "\(said)")
        #expect(lines.filter { $0.contains(" failed (attempt ") }.count < 10, "a few lines a minute, not one a failure: \(said)")
        #expect(lines.last?.hasPrefix("msg: stopping (SIGTERM): 50 sent, ") == true, "\(said)")
    }

    /// With the defaults a failing message is not dead after ten attempts (nor
    /// after a 429's), and `queue show` says when it gives up; the promise made at
    /// its first failure holds in a later run whose flags or config say otherwise.
    @Test func theDefaultsKeepAFailingMessageForDays() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            msg compose --to a@example.com --body x --enqueue > /dev/null
            msg flush --transport 'exec:/bin/sh -c "exit 75"' > /dev/null 2>&1
            for i in 2 3 4 5 6 7 8 9 10; do msg retry --now --transport 'exec:/bin/sh -c "exit 75"' > /dev/null 2>&1; done
            msg queue ls --format csv | tail -n +2 | cut -d, -f2,3
            msg queue show "$(msg queue ls | cut -c8-43)" --format table | grep '^gives up'
            """)
        #expect(r.lines.first == "failed,10", "\(r.out) \(r.err)")
        #expect(r.lines.last?.hasPrefix("gives up    at ") == true && r.out.contains("if it is still failing (promised)"), "\(r.out)")
        // What it was promised (no count) holds where the config says otherwise…
        try s.config("max_attempts = 3\n")
        let kept = try s.sh("msg retry --now --transport 'exec:/bin/sh -c \"exit 75\"' > /dev/null 2>&1; msg queue ls --format csv | tail -n +2 | cut -d, -f2,3")
        #expect(kept.lines == ["failed,11"], "\(kept.out)")
        // …and a run's flag promises anew.
        let flagged = try s.sh("msg retry --now --max-attempts 12 --transport 'exec:/bin/sh -c \"exit 75\"' > /dev/null 2>&1; msg queue ls --format csv | tail -n +2 | cut -d, -f2,3")
        #expect(flagged.lines == ["dead,12"], "\(flagged.out)")
    }

    /// The config file's policy is every command's: a plain `retry` after `flush`
    /// gives up where the config file says, per destination section.
    @Test func theConfigFilesPolicyIsEveryCommands() throws {
        let s = try Sandbox()
        try s.config("""
            transport = exec:/bin/sh -c "exit 75"
            backoff_base = 1ms
            [destination *@strict.example]
            max_attempts = 2
            """)
        let r = try s.sh("""
            msg compose --to a@strict.example --body x --enqueue > /dev/null
            msg compose --to b@lenient.example --body y --enqueue > /dev/null
            msg flush > /dev/null 2>&1; msg retry --now > /dev/null 2>&1; msg retry --now > /dev/null 2>&1
            msg queue ls --format csv | tail -n +2 | cut -d, -f2,3 | sort
            """)
        #expect(r.lines == ["dead,2", "failed,3"], "\(r.out) \(r.err)")
    }

    /// Every job line of examples/cron/crontab, run as cron runs it (by /bin/sh,
    /// standard input an empty pipe, no terminal, cron's few variables), does its
    /// job: a due failed message is retried and sent, the export is written (its
    /// directory made), the
    /// purge acts on every message, not on none.
    @Test func everyCrontabLineWorksAsCronRunsIt() throws {
        let s = try Sandbox()
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized.path
        let home = s.home + "/user"
        // No ~/audit: the export's line makes it.
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let crontab = try String(contentsOfFile: repository + "/examples/cron/crontab", encoding: .utf8)
        var cronPath = "/usr/bin:/bin"
        var jobs: [String] = []
        for line in crontab.split(separator: "\n").map(String.init) where !line.hasPrefix("#") && !line.isEmpty {
            if line.hasPrefix("PATH=") { cronPath = String(line.dropFirst(5)); continue }
            if line.range(of: #"^[A-Z_]+="#, options: .regularExpression) != nil { continue }
            // Five time fields, then the command; cron turns an unescaped % into a newline.
            let command = line.split(separator: " ", maxSplits: 5).last.map(String.init) ?? ""
            jobs.append(command.replacingOccurrences(of: "\\%", with: "%")
                .replacingOccurrences(of: "/usr/local/share/msg/", with: repository + "/examples/cron/"))
        }
        #expect(jobs.count == 3 && cronPath.contains("/usr/local/bin"), "\(jobs) \(cronPath)")
        let path = cronPath.replacingOccurrences(of: "/usr/local/bin", with: buildDirectory)
        // A due failed message, and one sent, in the user's default store.
        let seed = try s.sh("""
            export HOME='\(home)' MSG_HOME= XDG_CONFIG_HOME= XDG_DATA_HOME=
            unset MSG_HOME XDG_CONFIG_HOME XDG_DATA_HOME
            msg compose --to a@example.com --body retry-me --enqueue > /dev/null
            msg flush --backoff-base 1ms --transport 'exec:/bin/sh -c "exit 75"' > /dev/null 2>&1
            msg compose --to b@example.com --body sent --enqueue > /dev/null; msg flush > /dev/null
            msg queue ls --format csv | tail -n +2 | cut -d, -f2 | sort | tr '\\n' ' '
            """)
        #expect(seed.out == "failed sent ", "\(seed.out) \(seed.err)")
        for job in jobs {
            // As cron does: sh -c, stdin a pipe nobody writes to, a minimal environment.
            let r = try s.sh("""
                : | env -i HOME='\(home)' LOGNAME=root SHELL=/bin/sh PATH='\(path)' /bin/sh -c '\(job.replacingOccurrences(of: "'", with: "'\\''"))'
                """)
            #expect(r.status == 0, "\(job): exit \(r.status): \(r.err)")
            #expect(!r.err.contains("standard input"), "\(job) acted on nothing: \(r.err)")
        }
        let after = try s.sh("HOME='\(home)' msg queue ls --format csv | tail -n +2 | cut -d, -f2 | sort | tr '\\n' ' '; ls '\(home)/audit' | wc -l",
                             env: ["MSG_HOME": home + "/.local/share/msg", "XDG_CONFIG_HOME": home + "/.config"])
        #expect(after.lines == ["sent sent 2"], "the failed message was retried and sent; the export and its checksum written: \(after.out) \(after.err)")
    }

    /// An empty pipe names no message: the command acts on none, and its one line
    /// says how to act on every message (cron mails it to the user).
    @Test func anEmptyPipeActsOnNoneAndSaysTheFix() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            msg compose --to a@example.com --body x --enqueue > /dev/null
            msg queue ls --to nobody | msg flush > /dev/null; echo $?
            msg queue count --status sent
            msg queue ls | msg flush > /dev/null; echo $?
            msg queue count --status sent
            """)
        #expect(r.lines == ["0", "0", "0", "1"], "\(r.out) \(r.err)")
        #expect(r.err.contains("to act on every message the command takes, run it with </dev/null"), "\(r.err)")
    }
}
