import Foundation
import MsgKit
import Testing

/// Routing and settings an operator can see and check, through the binary:
/// `msg config`, `msg config check`, `msg route`, the warnings for what silently
/// changes a route, and per-destination deadline, workers, throttle and breaker.
@Suite(.timeLimit(.minutes(3))) struct RoutingCheckTests {
    /// A sandbox with `text` as its config file (MSG_CONFIG in `env`).
    func sandbox(_ text: String) throws -> (Sandbox, [String: String]) {
        let s = try Sandbox()
        _ = try s.file("msg.conf", text)
        return (s, ["MSG_CONFIG": s.home + "/msg.conf"])
    }

    @Test func configCheckNamesEachProblemByItsLine() throws {
        let (s, env) = try sandbox("""
            backoff_cap = 10m
            max_attemps = 5
            [destination *@example.com]
            transport = file:$MSG_HOME/example
            deadline = soon
            [destination ann@example.com]
            transport = file:$MSG_HOME/ann
            [destination *@exmaple.org]
            transport = nope://somewhere
            [destination hooks.*]
            transport = not a url
            """)
        // Queued before the file was written: with its errors, no command runs.
        _ = try s.sh("msg compose --to ann@example.com --body hi --enqueue > /dev/null; msg compose --to hooks.a --body hi --enqueue > /dev/null")
        let r = try s.sh("msg config check; echo \"exit $?\"", env: env)
        let path = s.home + "/msg.conf"
        #expect(r.lines.last == "exit 78", "\(r.out) \(r.err)")
        #expect(r.out.contains("\(path) line 2: unknown key 'max_attemps' (did you mean 'max_attempts'?)"), "\(r.out)")
        #expect(r.out.contains("\(path) line 5: deadline: invalid duration 'soon'"), "\(r.out)")
        #expect(r.out.contains("warning: \(path) line 6: [destination ann@example.com] never applies: [destination *@example.com] (line 3) comes first"), "\(r.out)")
        #expect(r.out.contains("warning: \(path) line 8: [destination *@exmaple.org] matches no destination in the store"), "\(r.out)")
        #expect(r.out.contains("\(path) line 9: transport: no transport plugin for scheme 'nope:'"), "\(r.out)")
        #expect(r.out.contains("\(path) line 11: transport: "), "a URL that does not parse: \(r.out)")
        #expect(!r.out.contains("line 10:") && !r.out.contains("line 1:") && !r.out.contains("line 4:"), "good lines are not named: \(r.out)")
        #expect(r.err.contains("4 errors, 2 warnings"), "\(r.err)")
        // Each line in the file's order.
        let order = r.lines.dropLast().compactMap { line -> Int? in
            guard let at = line.firstRange(of: " line ") else { return nil }
            return Int(line[at.upperBound...].prefix { $0.isNumber })
        }
        #expect(order == order.sorted() && order.count == 6, "\(order)")
        // Any other command refuses the file at its first error.
        let refused = try s.sh("msg queue count; echo \"exit $?\"", env: env)
        #expect(refused.lines.last == "exit 78" && refused.err.contains("\(path) line 2: unknown key 'max_attemps'"), "\(refused.err)")
    }

    @Test func configCheckPassesACleanFileAndWarnsWithoutFailing() throws {
        let (s, env) = try sandbox("""
            # the defaults, and one route
            give_up_after = 2d
            [destination *@example.com]
            transport = file:$MSG_HOME/example
            max_attempts = 3
            """)
        _ = try s.sh("msg compose --to ann@example.com --body hi --enqueue > /dev/null", env: env)
        let clean = try s.sh("msg config check; echo \"exit $?\"", env: env)
        #expect(clean.lines == ["exit 0"] && clean.err.contains("no problems"), "\(clean.out) \(clean.err)")
        _ = try s.file("msg.conf", "give_up_after = 2d\ngive_up_after = 3d\n[destination nobody@nowhere]\nmax_attempts = 1\n")
        let warned = try s.sh("msg config check; echo \"exit $?\"", env: env)
        #expect(warned.lines.last == "exit 0", "\(warned.out) \(warned.err)")
        #expect(warned.out.contains("line 2: 'give_up_after' is set again: this line wins over line 1"), "\(warned.out)")
        #expect(warned.out.contains("line 3: [destination nobody@nowhere] matches no destination"), "\(warned.out)")
    }

    @Test func configShowsEachSettingAndWhatSetIt() throws {
        let (s, env) = try sandbox("""
            backoff_cap = 10m
            breaker = 3
            [destination *@example.com]
            transport = smtp://alerts:hunter2@mail.example.com:587?from=alerts@example.com&token=s3cret
            deadline = 1s
            """)
        let r = try s.sh("msg config --transport stdout:", env: env.merging(["MSG_STORE": "json:\(s.home)/q.json"]) { $1 })
        let path = s.home + "/msg.conf"
        func row(_ start: String) -> String? { r.lines.first { $0.hasPrefix(start) } }
        #expect(r.status == 0, "\(r.err)")
        #expect(row("store = json:\(s.home)/q.json")?.hasSuffix("# MSG_STORE") == true, "\(r.out)")
        #expect(row("transport = stdout:")?.hasSuffix("# --transport") == true, "\(r.out)")
        #expect(row("backoff_cap = 10m")?.hasSuffix("# \(path) line 1") == true, "\(r.out)")
        #expect(row("breaker = 3")?.hasSuffix("# \(path) line 2") == true, "\(r.out)")
        #expect(row("deadline = 3s")?.hasSuffix("# default") == true, "\(r.out)")
        #expect(row("max_attempts = 0")?.hasSuffix("# default") == true, "\(r.out)")
        #expect(r.out.contains("[destination *@example.com]  # line 3"), "\(r.out)")
        #expect(row("deadline = 1s")?.hasSuffix("# line 5") == true, "\(r.out)")
        #expect(r.out.contains("smtp://alerts:***@mail.example.com:587?from=alerts@example.com&token=***"), "\(r.out)")
        #expect(!r.out.contains("hunter2") && !r.out.contains("s3cret"), "\(r.out)")
        #expect(r.out.contains("replaced for this run by --transport"), "\(r.out)")
    }

    @Test func routeAnswersForOverlappingPatterns() throws {
        let (s, env) = try sandbox("""
            backoff_cap = 10m
            [destination ops@example.com]
            max_attempts = 3
            [destination *@example.com]
            transport = file:$MSG_HOME/example
            deadline = 1s
            concurrency = 2
            [destination *]
            rate = 5/s
            breaker = 2
            """)
        let r = try s.sh("msg route ops@example.com ann@example.com bob@other.org", env: env)
        #expect(r.status == 0, "\(r.err)")
        let answers = try r.lines.map { try JSONParser.parse($0) }
        #expect(answers.count == 3)
        let ops = answers[0], ann = answers[1], bob = answers[2]
        #expect(ops["transport"]?.stringValue == "file:\(s.home)/example" && ops["route"]?.stringValue == "[destination *@example.com] (line 4)", "\(r.out)")
        #expect(ops["max_attempts"]?.intValue == 3 && ops["policy_from"]?.stringValue == "[destination ops@example.com] (line 2)", "\(r.out)")
        #expect(ops["backoff_cap"]?.stringValue == "10m", "the global key under the section: \(r.out)")
        #expect(ops["deadline"]?.stringValue == "1s" && ops["concurrency"]?.intValue == 2 && ops["own_workers"] == .bool(true), "\(r.out)")
        #expect(ops["rate"]?.stringValue == "5/s" && ops["breaker"]?.intValue == 2 && ops["rules_from"]?.stringValue == "[destination *] (line 8)", "\(r.out)")
        #expect(ann["max_attempts"]?.intValue == 0 && ann["policy_from"]?.stringValue == "\(s.home)/msg.conf line 1", "\(r.out)")
        #expect(bob["transport"]?.stringValue == "file:\(s.home)/outbox" && bob["route"]?.stringValue == "default", "\(r.out)")
        #expect(bob["deadline"]?.stringValue == "3s" && bob["own_workers"] == .bool(false) && bob["rate"]?.stringValue == "5/s", "\(r.out)")
        // A flag of the run over the sections, as flush would apply it.
        let flagged = try s.sh("msg route --deadline 9s --max-attempts 7 ops@example.com", env: env)
        let f = try JSONParser.parse(flagged.out)
        #expect(f["deadline"]?.stringValue == "9s" && f["workers_from"]?.stringValue == "--deadline" && f["max_attempts"]?.intValue == 7
            && f["policy_from"]?.stringValue == "--max-attempts", "\(flagged.out)")
        // From stdin: records, destination lines and bare destinations; a table on request.
        _ = try s.sh("msg compose --to ann@example.com --body hi --enqueue > /dev/null", env: env)
        let piped = try s.sh("{ msg queue ls; msg destinations; echo bob@other.org; } | msg route | cut -d, -f1", env: env)
        #expect(piped.lines == [#"{"destination":"ann@example.com""#, #"{"destination":"ann@example.com""#, #"{"destination":"bob@other.org""#], "\(piped.out) \(piped.err)")
        let table = try s.sh("msg route --format table ann@example.com", env: env)
        #expect(table.lines.first == "ann@example.com" && table.out.contains("deadline 1s, 2 workers of its own   from [destination *@example.com] (line 4)"), "\(table.out)")
        // msg destinations shows the same route.
        let dests = try s.sh("msg destinations", env: env)
        #expect(dests.out.contains(#""transport":"file:\#(s.home)/example","route":"[destination *@example.com] (line 4)""#), "\(dests.out)")
        let destTable = try s.sh("msg destinations --format table", env: env)
        #expect(destTable.out.contains("file:\(s.home)/example (line 4)"), "\(destTable.out)")
        // msg shell's lines route by the shell's config file, as the command line does.
        let shell = try s.sh("printf 'route ann@example.com\\n' | msg shell --config msg.conf")
        #expect(shell.out.contains(#""route":"[destination *@example.com] (line 4)""#), "\(shell.out) \(shell.err)")
        let bad = try s.sh("printf '{\"body\":1}\\n' | msg route; echo \"exit $?\"", env: env)
        #expect(bad.lines.last == "exit 65" && bad.err.contains("line 1: a record without \"to\""), "\(bad.err)")
    }

    @Test func aTransportForTheRunOverSectionsSaysSoAndRouteKeepsOne() throws {
        let (s, env) = try sandbox("""
            [destination *@example.com]
            transport = file:$MSG_HOME/example
            [destination *@example.org]
            transport = file:$MSG_HOME/org
            """)
        _ = try s.sh("msg compose --to ann@example.com --body a --enqueue > /dev/null; msg compose --to bob@example.org --body b --enqueue > /dev/null", env: env)
        let r = try s.sh("msg flush --transport file:$MSG_HOME/run --route '*@example.org=file:'$MSG_HOME/org > /dev/null; echo \"exit $?\"", env: env)
        #expect(r.lines.first == "exit 0", "\(r.err)")
        let warnings = r.err.split(separator: "\n").filter { $0.contains("warning: --transport file:\(s.home)/run replaces the transport of 2 [destination] sections of \(s.home)/msg.conf (lines 1, 3)") }
        #expect(warnings.count == 1, "one line: \(r.err)")
        #expect(try s.sh("ls run/new").lines.count == 1 && s.sh("ls org/new").lines.count == 1 && s.sh("ls example/new 2>/dev/null").lines.isEmpty,
                "the example.org message took its --route, the other the run's transport")
        // The variable says so too; with no section to replace, nothing is said.
        _ = try s.sh("msg compose --to c@example.com --body c --enqueue > /dev/null", env: env)
        let variable = try s.sh("msg flush > /dev/null", env: env.merging(["MSG_TRANSPORT": "file:\(s.home)/run"]) { $1 })
        #expect(variable.err.contains("warning: MSG_TRANSPORT file:\(s.home)/run replaces the transport of 2"), "\(variable.err)")
        _ = try s.sh("msg compose --to d@example.com --body d --enqueue > /dev/null")
        let quiet = try s.sh("msg flush --transport file:$MSG_HOME/run > /dev/null")
        #expect(quiet.status == 0 && !quiet.err.contains("warning"), "\(quiet.err)")
        let badRoute = try s.sh("msg flush --route 'no-equals' < /dev/null; echo \"exit $?\"", env: env)
        #expect(badRoute.lines.last == "exit 64" && badRoute.err.contains("expected PATTERN=URL"), "\(badRoute.err)")
    }

    @Test func aSectionNoMessageMatchedIsSaidOnce() throws {
        let (s, env) = try sandbox("""
            [destination *@exmaple.com]
            max_attempts = 3
            [destination *@example.com]
            backoff_base = 5s
            """)
        let r = try s.sh("""
            for i in 1 2 3; do msg compose --to u$i@example.com --body x --enqueue > /dev/null; done
            msg flush > /dev/null
            """, env: env)
        #expect(r.status == 0, "\(r.err)")
        let said = r.err.split(separator: "\n").filter { $0.contains("[destination *@exmaple.com] (line 1) matched no message of this run and no destination in the store") }
        #expect(said.count == 1, "\(r.err)")
        #expect(!r.err.contains("[destination *@example.com]"), "the section that matched is not named: \(r.err)")
        // A run that sends nothing says nothing.
        let idle = try s.sh("msg flush > /dev/null", env: env)
        #expect(!idle.err.contains("warning"), "\(idle.err)")
    }

    /// Ten destinations that hang, with a 1 s deadline in their section, hold no
    /// message of another destination: their section has a worker of its own.
    @Test func hungDestinationsHoldOnlyTheirOwnMessages() throws {
        let (s, env) = try sandbox("""
            [destination *@hung.example]
            transport = exec:$MSG_HOME/hang
            deadline = 1s
            """)
        _ = try s.file("hang", "#!/bin/sh\nexec sleep 60\n")
        let r = try s.sh("""
            chmod +x hang
            for i in 0 1 2 3 4 5 6 7 8 9; do echo "{\\"to\\":\\"h$i@hung.example\\",\\"body\\":\\"x\\"}"; done | msg compose --enqueue > /dev/null
            for i in $(seq 30); do echo "{\\"to\\":\\"ok@work.example\\",\\"body\\":\\"m$i\\"}"; done | msg compose --enqueue > /dev/null
            date -u +%s%3N
            msg flush > /dev/null; echo "exit $?"
            msg queue ls --status sent --history
            """, env: env)
        let started = Int64(r.lines[0]) ?? 0
        #expect(r.lines[1] == "exit 75", "the hung ones are deferred: \(r.err)")
        let sent = try r.lines.dropFirst(2).map { try JSONParser.parse($0) }
        #expect(sent.count == 30 && sent.allSatisfy { $0["to"]?.stringValue == "ok@work.example" }, "\(r.out)")
        let lastSent = sent.compactMap { rec -> Int64? in
            guard case .array(let history)? = rec["history"] else { return nil }
            return history.compactMap { e in e["event"]?.stringValue == "sent" ? e["at"]?.stringValue.flatMap { Timestamp(rfc3339: $0)?.milliseconds } : nil }.max()
        }.max() ?? .max
        #expect(lastSent - started <= 2000, "the 30 went out \(lastSent - started) ms after the flush started (ten hung destinations hold 10 s when they share a worker)")
        let failed = try s.sh("msg queue ls --status failed | grep -c '\"code\":\"timeout\"'", env: env)
        #expect(failed.lines == ["10"], "each hung one timed out at its section's deadline: \(failed.out)")
    }

    @Test func aSectionsBreakerAndThrottleApplyToItsDestinationsOnly() throws {
        let (s, env) = try sandbox("""
            [destination down.*]
            breaker = 1
            breaker_cooldown = 10m
            [destination slow.*]
            rate = 2/s
            """)
        let r = try s.sh("""
            for d in down.a flaky.b; do for i in 1 2 3; do msg compose --to $d --body x --enqueue > /dev/null; done; done
            msg flush --transport 'stdout:?fd=3&fail_to=down.a,flaky.b' 3>/dev/null > /dev/null; echo "exit $?"
            """, env: env)
        #expect(r.lines == ["exit 75"], "\(r.out) \(r.err)")
        #expect(r.err.contains("destination down.a: circuit open for 10m after 1 failures in a row"), "\(r.err)")
        #expect(!r.err.contains("destination flaky.b: circuit open"), "flaky.b keeps the default breaker of 5: \(r.err)")
        let throttled = try s.sh("""
            for d in slow.x fast.y; do for i in 1 2 3 4 5; do msg compose --to $d --body x --enqueue > /dev/null; done; done
            msg flush --transport 'stdout:?fd=3' 3>/dev/null > /dev/null; echo "exit $?"
            msg queue ls --status sent --to 'slow.x' --history
            """, env: env)
        #expect(throttled.lines.first == "exit 75", "down.a's breaker still holds its two: \(throttled.err)")
        let times = try throttled.lines.dropFirst().compactMap { line -> Int64? in
            guard case .array(let history)? = try JSONParser.parse(line)["history"] else { return nil }
            return history.compactMap { e in e["event"]?.stringValue == "sent" ? e["at"]?.stringValue.flatMap { Timestamp(rfc3339: $0)?.milliseconds } : nil }.max()
        }
        #expect(times.count == 5 && (times.max() ?? 0) - (times.min() ?? 0) >= 1500, "five at 2/s take 2 s: \(times)")
        let fast = try s.sh("msg queue count --status sent --to fast.y", env: env)
        #expect(fast.lines == ["5"], "\(fast.out)")
    }
}
