import Foundation
import MsgKit
import Testing

/// Destinations that must wait never hold back the others, however many messages
/// they have ahead of them in FIFO order, and a killed probe does not hold its
/// destination (#25), through the real binary.
@Suite(.timeLimit(.minutes(3))) struct BlockedDestinationTests {
    /// 5,000 messages for a destination whose breaker opens, then 10 for others:
    /// the 10 go in the same run, the next run sends what came since, and the
    /// summary counts every message that waits.
    @Test func messagesBehindAnOpenBreakerAreFound() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            (seq 5000 | awk '{printf "{\\"to\\":\\"down\\",\\"body\\":\\"%d\\"}\\n", $1}'
             seq 10 | awk '{printf "{\\"to\\":\\"ok%d\\",\\"body\\":\\"%d\\"}\\n", $1, $1}') | msg compose --enqueue > /dev/null
            t='stdout:?fail_to=down&fd=3'
            msg flush --transport "$t" 3>/dev/null 2> first.err | grep -c '"sent"'; echo "exit ${PIPESTATUS[0]}"
            printf '{"to":"ok99","body":"late"}\\n' | msg compose --enqueue > /dev/null
            msg flush --transport "$t" 3>/dev/null 2> second.err | grep -c '"sent"'; echo "exit ${PIPESTATUS[0]}"
            cat first.err second.err
            """)
        #expect(Array(r.lines.prefix(4)) == ["10", "exit 75", "1", "exit 75"], "\(r.out)")
        #expect(r.out.contains("destination down: circuit open until") && r.out.contains("4995 messages wait"), "every waiting message counted: \(r.out)")
    }

    /// One slow destination with 5,000 messages and eight workers: the 50 messages
    /// of the others, behind them in FIFO order, all go within a few seconds.
    @Test func aSlowDestinationDoesNotStarveTheOthers() throws {
        let s = try Sandbox()
        _ = try s.file("deliver", "#!/bin/sh\n[ \"$MSG_TO\" = slow ] && sleep 0.2\nexit 0\n")
        let r = try s.sh("""
            chmod +x deliver
            (seq 5000 | awk '{printf "{\\"to\\":\\"slow\\",\\"body\\":\\"%d\\"}\\n", $1}'
             seq 50 | awk '{printf "{\\"to\\":\\"fast%d\\",\\"body\\":\\"%d\\"}\\n", $1, $1}') | msg compose --enqueue > /dev/null
            msg flush --concurrency 8 --transport "exec:$PWD/deliver" > /dev/null 2>&1 & pid=$!
            for i in $(seq 1 80); do
                [ "$(msg queue ls --status sent --format csv | grep -c ',fast')" -ge 50 ] && break
                sleep 0.1
            done
            kill -TERM $pid; wait $pid
            msg queue ls --status sent --format csv | grep -c ',fast'
            """)
        #expect(r.lines.last == "50", "the others went while the slow one was busy: \(r.out) \(r.err)")
    }

    /// The process sending a half-open breaker's probe is killed: `recover` settles
    /// the probe, and the next flush sends the destination's messages at once
    /// instead of waiting out the probe's lease (thousands of seconds by default).
    @Test func aKilledProbeDoesNotHoldItsDestination() throws {
        let s = try Sandbox()
        _ = try s.file("hang", "#!/bin/sh\nsleep 30\n")
        let r = try s.sh("""
            chmod +x hang
            seq 10 | awk '{printf "{\\"to\\":\\"api\\",\\"body\\":\\"%d\\"}\\n", $1}' | msg compose --enqueue > /dev/null
            msg flush --breaker-cooldown 100ms --transport 'stdout:?fail=1&fd=3' 3>/dev/null > /dev/null 2>&1
            sleep 0.3
            msg flush --deadline 60s --breaker-cooldown 100ms --transport "exec:$PWD/hang" > /dev/null 2>&1 & pid=$!
            until [ "$(msg queue count --status sending)" = 1 ]; do sleep 0.05; done
            kill -9 $pid; wait $pid 2>/dev/null
            msg destinations --format ndjson | grep -o '"breaker":"[a-z-]*"'
            msg recover --stale-after 0s > /dev/null 2>&1
            msg flush --transport 'stdout:?fd=3' 3>/dev/null | grep -c '"sent"'
            """)
        // The five that failed before the breaker opened wait for `retry`; the probe and
        // the four behind it go.
        #expect(r.lines.last == "5", "the destination's queued messages went after recover: \(r.out) \(r.err)")
    }
}
