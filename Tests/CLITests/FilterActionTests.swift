import Foundation
import MsgKit
import Testing

/// One filter for `queue ls`, `count`, `rm`, `hold` and `release` (#27), through
/// the real binary: an action changes exactly what `ls` lists with the same
/// filter, `--dry-run` changes nothing, `--reason` is kept in the history.
@Suite(.timeLimit(.minutes(2))) struct FilterActionTests {
    func seed(_ s: Sandbox) throws {
        let r = try s.sh("""
            (for i in 1 2 3; do echo '{"to":"a@x","body":"a'$i'","headers":{"Tenant":"t1"}}'; done
             echo '{"to":"b@x","body":"b1","headers":{"tenant":"t2"}}'
             echo '{"to":"down@x","body":"d1"}') | msg compose --enqueue > /dev/null
            msg flush --transport 'stdout:?fd=3&fail_to=down@x' 3>/dev/null > /dev/null 2>&1
            (for i in 1 2; do echo '{"to":"a@x","body":"later'$i'","headers":{"tenant":"t1"}}'; done) | msg compose --enqueue > /dev/null
            """)
        #expect(r.status == 0, "\(r.err)")
    }

    @Test func filtersNarrowWhatIsListedAndCounted() throws {
        let s = try Sandbox()
        try seed(s)
        let r = try s.sh("""
            msg queue count --header tenant=t1
            msg queue count --header tenant
            msg queue count --error remote
            msg queue count --error none --status sent
            msg queue count --min-attempts 1
            msg queue count --status queued --header tenant=t1 --limit 1
            msg queue ls --error remote --format csv | sed -n 2p | cut -d, -f2,4
            msg queue count --updated-before 2000-01-01
            msg queue count --header =v 2>&1; echo "exit $?"
            """)
        #expect(r.lines == ["5", "6", "1", "4", "5", "1", "failed,down@x", "0",
                            "msg: The value '=v' is invalid for '--header <name[=value]>': expected NAME or NAME=VALUE, the name not empty (see msg queue count --help)", "exit 64"], "\(r.out) \(r.err)")
    }

    @Test func actionsChangeExactlyWhatTheFilterMatches() throws {
        let s = try Sandbox()
        try seed(s)
        let r = try s.sh("""
            msg queue ls --status queued --header tenant=t1 --format csv | cut -d, -f1 | sed 1d > listed
            msg queue hold --status queued --header tenant=t1 --dry-run | wc -l
            msg queue count --status held
            msg queue hold --status queued --header tenant=t1 --reason 'tenant t1 over quota' | sed 's/^{"id":"\\([^"]*\\)".*/\\1/' > held
            cmp listed held && echo same
            msg queue show "$(head -1 held)" | grep -c '"event":"held","status":"held","reason":"tenant t1 over quota"'
            msg queue release --header tenant=t1 --status held --limit 1 | wc -l
            msg queue rm --to down@x --dry-run > /dev/null
            msg queue count --to down@x
            msg queue rm --error remote | wc -l
            msg queue count --to down@x
            """)
        #expect(r.lines == ["2", "0", "same", "1", "1", "1", "1", "0"], "\(r.out) \(r.err)")
        #expect(r.err.contains("msg: dry run: would hold 2 messages; nothing changed"), "\(r.err)")
        #expect(r.err.contains("msg: hold: 2 messages") && r.err.contains("msg: dry run: would remove 1 message; nothing changed"), "\(r.err)")
        #expect(r.err.contains("msg: remove: 1 message"), "\(r.err)")
    }

    /// `retry` takes the same filter (beside its own statuses): only the failed, or
    /// with `--dead` only the dead, messages it matches.
    @Test func retryTakesTheFilter() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            (echo '{"to":"a@x","body":"1","headers":{"tenant":"t1"}}'; echo '{"to":"b@x","body":"2","headers":{"tenant":"t2"}}') \\
                | msg compose --enqueue > /dev/null
            msg flush --transport 'stdout:?fd=3&fail_to=a@x,b@x' 3>/dev/null > /dev/null 2>&1
            echo '{"to":"c@x","body":"3"}' | msg compose --enqueue > /dev/null
            msg flush --transport 'stdout:?fd=3&fail_to=c@x&error=rejected' 3>/dev/null > /dev/null 2>&1
            msg retry --now --header tenant=t2 --transport stdout: | grep '"status":"sent"' | cut -c1-60 | grep -c '"to":"b@x"'
            msg queue count --status failed
            msg retry --dead --error rejected 2>/dev/null | grep -c '"to":"c@x"'
            msg retry --dead --error remote 2>/dev/null | wc -l
            msg queue count --status queued
            """)
        #expect(r.lines == ["1", "1", "1", "0", "1"], "\(r.out) \(r.err)")
    }

    /// A pipe that brings no ids means none, never "everything the filter matches".
    @Test func anEmptyPipeChangesNothing() throws {
        let s = try Sandbox()
        try seed(s)
        let r = try s.sh("""
            msg queue ls --to nobody | msg queue rm --status sent | wc -l
            msg queue count --status sent
            msg queue rm --status sent --dry-run < /dev/null | wc -l
            """)
        #expect(r.lines == ["0", "4", "4"], "\(r.out) \(r.err)")
    }

    /// Ids given and a filter: only the ids the filter matches change, and the
    /// others (sent ones, which hold would refuse) are not reported.
    @Test func idsGivenAreNarrowedByTheFilter() throws {
        let s = try Sandbox()
        try seed(s)
        let r = try s.sh("""
            msg queue ls | msg queue hold --status queued | wc -l
            msg queue count --status held
            msg queue ls --status held --format csv | sed -n 2p | cut -d, -f4
            """)
        #expect(r.lines == ["2", "2", "a@x"] && r.err == "msg: hold: 2 messages\n", "\(r.out) \(r.err)")
    }
}

/// `retry --pace` (#27) spreads a redrive over time, whatever the destinations:
/// read from the attempts the store recorded, never from the test's clock.
@Suite(.timeLimit(.minutes(2))) struct PacedRetryTests {
    @Test func aPacedRetrySpacesItsAttempts() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            seq 10 | awk '{printf "{\\"to\\":\\"u%d\\",\\"body\\":\\"b\\"}\\n", $1}' | msg compose --enqueue > /dev/null
            msg flush --transport 'stdout:?fail=1&fd=3' 3>/dev/null > /dev/null 2>&1
            msg retry --now --pace 20/s --transport stdout: | grep -c '"status":"sent"'
            """)
        #expect(r.lines == ["10"], "\(r.out) \(r.err)")
        let sent = try records(try s.sh("msg queue ls --status sent --history").out)
        // The second attempt of each, in order: at most one per 50 ms.
        let times = sent.compactMap { $0.history.filter { $0.event == "attempt" }.dropFirst().first?.at.milliseconds }.sorted()
        #expect(times.count == 10)
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 >= 45 }, "attempts closer than the pace allows: \(gaps)")
        #expect((times.last ?? 0) - (times.first ?? 0) >= 9 * 45, "\(times)")
    }
}
