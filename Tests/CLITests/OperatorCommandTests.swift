import Foundation
import MsgKit
import Testing

/// Operator commands do exactly what they say (#31), through the real binary: the
/// filter everywhere, hold what can wait, overrides that override, first contact,
/// tables for 80 columns, lag without suspended destinations, a manifest that
/// checks from where the export ran.
@Suite(.timeLimit(.minutes(3))) struct OperatorCommandTests {
    static let mock = "--transport 'stdout:?fd=3' 3>/dev/null"

    /// `flush --to` sends one destination's messages now, as `postqueue -s`; a
    /// pattern takes several; the others stay queued.
    @Test func flushTakesTheFilter() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            printf '%s\\n' '{"to":"a@example.com","body":"1"}' '{"to":"b@example.com","body":"2"}' '{"to":"c@other.org","body":"3"}' \\
                '{"to":"a@example.com","body":"4"}' | msg compose --enqueue > /dev/null
            msg flush --to a@example.com \(Self.mock) < /dev/null | grep -o '"to":"[^"]*"'
            msg queue count --status queued < /dev/null
            msg flush --to '*@example.com' \(Self.mock) < /dev/null | wc -l
            msg flush --to nobody@example.com \(Self.mock) < /dev/null; echo "exit $?"
            msg queue ls --status queued --format csv < /dev/null | tail -n +2 | cut -d, -f4
            """)
        #expect(r.lines == [#""to":"a@example.com""#, #""to":"a@example.com""#, "2", "1", "exit 0", "c@other.org"], "\(r.out) \(r.err)")
        #expect(r.err.contains("msg: flush: 0 messages match"), "\(r.err)")
    }

    /// `--error CODE` is the last error of what failed: a message sent after a
    /// failure has none, so `rm --error` never removes delivered history.
    @Test func errorMatchesOnlyWhatFailed() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            printf '%s\\n' '{"to":"a@x","body":"1"}' '{"to":"b@x","body":"2"}' | msg compose --enqueue > /dev/null
            msg flush --transport 'stdout:?fd=3&fail=1' 3>/dev/null < /dev/null > /dev/null 2>&1
            msg retry --now --to a@x \(Self.mock) < /dev/null > /dev/null
            msg queue count --error remote < /dev/null
            msg queue count --error none < /dev/null
            msg queue rm --error remote < /dev/null | grep -o '"to":"[^"]*"'
            msg queue count --status sent < /dev/null
            """)
        #expect(r.lines == ["1", "1", #""to":"b@x""#, "1"], "\(r.out) \(r.err)")
    }

    /// Hold takes queued and failed messages; release gives each back as it was,
    /// its due time kept; a filter's matches that cannot be held are one count,
    /// exit 0; an id given that cannot be held is one line, the id once, exit 65.
    @Test func holdWhatCanWait() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            printf '%s\\n' '{"to":"f@x","body":"1","headers":{"tenant":"acme"}}' '{"to":"s@x","body":"2","headers":{"tenant":"acme"}}' \\
                | msg compose --enqueue > /dev/null
            msg flush --transport 'stdout:?fd=3&fail_to=f@x' --backoff-base 1h 3>/dev/null < /dev/null > /dev/null 2>&1
            echo '{"to":"q@x","body":"3","headers":{"tenant":"acme"}}' | msg compose --enqueue > /dev/null
            msg queue ls --status failed --format csv < /dev/null | sed -n 2p | cut -d, -f5 > due.before
            msg queue hold --header tenant=acme --reason "acme over quota" < /dev/null | wc -l; echo "exit ${PIPESTATUS[0]}"
            msg retry --now \(Self.mock) < /dev/null | wc -l
            msg flush \(Self.mock) < /dev/null | wc -l
            msg queue release --header tenant=acme < /dev/null > /dev/null
            msg queue ls --format csv < /dev/null | tail -n +2 | cut -d, -f2,4 | sort
            msg queue ls --status failed --format csv < /dev/null | sed -n 2p | cut -d, -f5 | cmp - due.before && echo "due kept"
            sent=$(msg queue ls --status sent --format csv < /dev/null | sed -n 2p | cut -d, -f1)
            msg queue hold "$sent" 2>&1; echo "exit $?"
            """)
        #expect(Array(r.lines.prefix(8)) == ["2", "exit 0", "0", "0", "failed,f@x", "queued,q@x", "sent,s@x", "due kept"], "\(r.out) \(r.err)")
        #expect(r.err.contains("msg: hold: 2 messages; 1 skipped that cannot be held (1 sent)"), "\(r.err)")
        let sent = r.lines.count > 8 ? String(r.lines[8].dropFirst(5).prefix(36)) : ""
        #expect(r.lines.dropFirst(8) == ["msg: \(sent): it is sent; only queued or failed messages can be held", "exit 65"], "\(r.out)")
        let history = try s.sh("msg queue ls --status failed --history < /dev/null").out
        #expect(history.contains(#""event":"held","status":"held","from":"failed","reason":"acme over quota""#)
                && history.contains(#""event":"released","status":"failed""#), "\(history)")
    }

    /// `retry --now` sends whatever pause a destination asked for; `destinations
    /// resume` ends a pause and an open breaker, and says which.
    @Test func overridesOverride() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            printf '%s\\n' '{"to":"api","body":"1"}' '{"to":"down","body":"2"}' '{"to":"down","body":"3"}' | msg compose --enqueue > /dev/null
            msg flush --transport 'stdout:?fd=3&fail_to=api&error=rate_limited&retry_after=1h' 3>/dev/null --breaker 1 --breaker-cooldown 1h \\
                --to api < /dev/null > /dev/null 2>&1
            msg flush --transport 'stdout:?fd=3&fail_to=down' 3>/dev/null --breaker 1 --breaker-cooldown 1h --to down < /dev/null > /dev/null 2>&1
            msg destinations --format table < /dev/null | awk '{print $1, $2}'
            msg retry --now --to api \(Self.mock) < /dev/null | grep -c '"status":"sent"'
            msg flush --transport 'stdout:?fd=3&fail_to=api&error=rate_limited&retry_after=1h' 3>/dev/null < /dev/null > /dev/null 2>&1
            msg destinations resume api 2>&1
            msg destinations resume down 2>&1
            msg destinations resume down 2>&1
            msg flush --breaker 1 \(Self.mock) < /dev/null | grep -c '"status":"sent"'
            """)
        #expect(Array(r.lines.prefix(4)) == ["DESTINATION STATE", "api paused", "down open", "1"], "\(r.out) \(r.err)")
        #expect(r.lines.dropFirst(4).first?.hasPrefix("msg: destination api: resumed: pause until ") == true, "\(r.out)")
        #expect(Array(r.lines.dropFirst(5)) == ["msg: destination down: resumed: breaker closed (after 1 failures in a row)",
                                                "msg: destination down: nothing to resume: it was not suspended, paused or open", "1"],
                "\(r.out) \(r.err)")
    }

    /// `--limit` holds for the redrive; `--dry-run` for retry and purge; `--reason`
    /// for retry, in each history.
    @Test func limitsDryRunsAndReasons() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            seq 3 | awk '{printf "{\\"to\\":\\"u%d\\",\\"body\\":\\"b\\"}\\n", $1}' | msg compose --enqueue > /dev/null
            msg flush --transport 'stdout:?fd=3&fail=1&error=rejected' 3>/dev/null < /dev/null > /dev/null 2>&1
            msg retry --dead --dry-run --limit 2 < /dev/null | wc -l
            msg retry --dead --limit 1 --reason "fixed the template" < /dev/null | wc -l
            msg queue count --status dead < /dev/null
            msg flush \(Self.mock) < /dev/null > /dev/null
            msg queue purge --status sent,dead --older-than 0s --dry-run < /dev/null | wc -l
            msg queue count < /dev/null
            msg queue ls --status sent --history < /dev/null | grep -c '"event":"redriven","status":"queued","reason":"fixed the template"'
            """)
        #expect(r.lines == ["2", "1", "2", "3", "3", "1"], "\(r.out) \(r.err)")
        #expect(r.err.contains("msg: dry run: would redrive 2 messages; nothing changed")
                && r.err.contains("msg: dry run: would purge 3 messages; nothing changed"), "\(r.err)")
    }

    /// On a new machine the commands that only look see an empty queue and create
    /// nothing; a store that was named stays an error; the textfile holds zeros.
    @Test func firstContact() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            export MSG_HOME="$PWD/new"
            msg queue ls < /dev/null; echo "ls $?"
            msg queue count < /dev/null
            msg queue stats < /dev/null; echo "stats $?"
            msg destinations < /dev/null; echo "destinations $?"
            msg export < /dev/null; echo "export $?"
            mkdir tf && msg metrics --textfile tf && grep '^msg_messages{status="queued"}' tf/msg.prom
            msg metrics | grep -c '^msg_queue_due_messages 0$'
            test -e new && echo "made a home" || echo "nothing made"
            msg queue ls --store "sqlite:$PWD/typo.sqlite" < /dev/null 2>&1; echo "exit $?"
            """)
        #expect(r.lines == ["ls 0", "0", "stats 0", "destinations 0", "export 0", #"msg_messages{status="queued"} 0"#, "1", "nothing made",
                            "msg: there is no store at \(s.home)/typo.sqlite: nothing has been queued there yet (msg queue add creates it); check --store or MSG_STORE",
                            "exit 74"], "\(r.out) \(r.err)")
    }

    /// A short id: what a table shows is taken by every command; a part that
    /// names several is refused, naming them.
    @Test func shortIDs() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            seq 3 | awk '{printf "{\\"to\\":\\"u%d\\",\\"body\\":\\"b\\"}\\n", $1}' | msg compose --enqueue > /dev/null
            short=$(msg queue ls --format table < /dev/null | sed -n 2p | cut -d' ' -f1)
            echo "${#short}"
            full=$(msg queue ls --format csv < /dev/null | sed -n 2p | cut -d, -f1)
            [ "${full%$short}" != "$full" ] && echo "a tail of the id"
            msg queue show "$short" --format ndjson | cut -c8-43 | grep -c "$full"
            msg queue hold "$short" | wc -l
            msg queue show "${full:0:8}" 2>&1 | grep -c "^msg: '${full:0:8}' is ambiguous: it is part of 3 ids"; echo "exit ${PIPESTATUS[0]}"
            msg queue show ffffffff 2>&1; echo "exit $?"
            """)
        #expect(r.lines == ["8", "a tail of the id", "1", "1", "1", "exit 64", "msg: no message id starts or ends with 'ffffffff'", "exit 65"],
                "\(r.out) \(r.err)")
    }

    /// At an 80-column terminal, `queue ls`, `destinations` and `plugins` fit, and
    /// never cut the column they exist for: the recipient, the destination, where
    /// the plugin was found.
    @Test func tablesFit80Columns() throws {
        let s = try Sandbox()
        let seeded = try s.sh("""
            printf '%s\\n' '{"to":"bob.smith@example.com","body":"hello there, a body long enough to be cut"}' \\
                '{"to":"notifications.api.example.com","body":"x"}' | msg compose --enqueue > /dev/null
            msg destinations suspend notifications.api.example.com --for 2h --reason "their maintenance window, change CHG-4411" 2> /dev/null
            """)
        #expect(seeded.status == 0, "\(seeded.err)")
        let terminal = try TerminalSession("cd \(s.home) && export MSG_HOME=\(s.home) XDG_CONFIG_HOME=\(s.home)/config PATH=\(buildDirectory):$PATH"
                                           + " && msg queue ls && msg destinations && msg plugins", width: 80)
        let screen = terminal.waitFor("EXITED 0") ?? terminal.screen
        let lines = screen.split(separator: "\n").map(String.init)
        #expect(lines.allSatisfy { $0.count <= 80 }, "\(screen)")
        #expect(lines.contains { $0.contains("queued     0    due      bob.smith@example.com") }, "the recipient whole: \(screen)")
        #expect(lines.contains { $0.hasPrefix("notifications.api.example.com  suspended  in 2h") }, "\(screen)")
        #expect(lines.contains { $0.hasSuffix("libSQLiteStore.so") } && !screen.contains("…ransport"), "the files whole: \(screen)")
    }

    /// A planned suspension is no lag: the due count and the lag leave it out and
    /// a gauge of its own counts it.
    @Test func lagLeavesSuspendedDestinationsOut() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            msg compose --to api --body 1 | sed 's/"created_at":"[^"]*"/"created_at":"2020-01-01T00:00:00.000Z"/' | msg queue add > /dev/null
            msg destinations suspend api --for 2h --reason deploy 2> /dev/null
            msg metrics | grep -E '^msg_queue_(due_messages|suspended_due_messages|lag_seconds) '
            msg destinations resume api 2> /dev/null
            msg metrics | grep -E '^msg_queue_due_messages '
            """)
        #expect(Array(r.lines.prefix(3)) == ["msg_queue_due_messages 0", "msg_queue_suspended_due_messages 1", "msg_queue_lag_seconds 0"]
                && r.lines.dropFirst(3) == ["msg_queue_due_messages 1"], "\(r.out) \(r.err)")
    }

    /// The manifest names the file as it was given: `sha256sum -c sub/x.csv.sha256`
    /// checks from where the export ran, an absolute path from anywhere.
    @Test func theManifestChecksWithThePathAsGiven() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            echo '{"to":"a","body":"1"}' | msg compose --enqueue > /dev/null
            mkdir -p sub /tmp/msg-manifest-$$
            msg export --status all --out sub/x.csv --format csv < /dev/null 2> /dev/null && sha256sum -c sub/x.csv.sha256
            msg export --status all --out "$PWD/sub/y.ndjson" < /dev/null 2> /dev/null && (cd / && sha256sum -c "$OLDPWD/sub/y.ndjson.sha256" | sed "s|$OLDPWD/||")
            """)
        #expect(r.lines == ["sub/x.csv: OK", "sub/y.ndjson: OK"], "\(r.out) \(r.err)")
    }
}
