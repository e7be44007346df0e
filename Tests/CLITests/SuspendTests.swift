import Foundation
import MsgKit
import Testing

/// `msg destinations suspend` and `resume` (#27), through the real binary: a
/// suspension is kept in the store, so every later process honours it, holds back
/// only its destination, and says why wherever a message's wait is shown.
@Suite(.timeLimit(.minutes(2))) struct SuspendTests {
    @Test func aSuspendedDestinationWaitsUntilResumed() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            (seq 3 | awk '{printf "{\\"to\\":\\"down@x\\",\\"body\\":\\"%d\\"}\\n", $1}'
             seq 3 | awk '{printf "{\\"to\\":\\"up@x\\",\\"body\\":\\"%d\\"}\\n", $1}') | msg compose --enqueue > /dev/null
            msg destinations suspend down@x --reason 'their maintenance, ticket 42' 2> suspend.err
            msg flush --transport stdout: 2> flush.err | grep -c '"sent"'; echo "exit ${PIPESTATUS[0]}"
            msg queue count --status queued
            id=$(msg queue ls --status queued --format csv | sed -n 2p | cut -d, -f1)
            msg queue show "$id" 2>&1 >/dev/null
            msg destinations --format ndjson | grep down@x
            msg destinations resume down@x 2> resume.err
            msg flush --transport stdout: | grep -c '"sent"'; echo "exit ${PIPESTATUS[0]}"
            msg destinations --format ndjson | grep -c suspended
            cat suspend.err flush.err resume.err
            """)
        let lines = r.lines
        #expect(Array(lines.prefix(3)) == ["3", "exit 75", "3"], "only up@x went, exit 75, three wait: \(r.out) \(r.err)")
        #expect(lines.count > 3 && lines[3].contains("suspended: down@x was suspended by hand (their maintenance, ticket 42)"), "\(r.out)")
        let entry = lines.count > 4 ? (try? JSONParser.parse(lines[4])) : nil
        #expect(entry?["suspended"]?["reason"]?.stringValue == "their maintenance, ticket 42", "\(r.out)")
        #expect(entry?["suspended"]?["until"] == nil && entry?["queued"]?.intValue == 3, "\(r.out)")
        #expect(Array(lines.dropFirst(5).prefix(3)) == ["3", "exit 0", "0"], "resumed, the three went: \(r.out)")
        #expect(r.out.contains("msg: destination down@x: suspended until msg destinations resume; 3 messages wait"), "\(r.out)")
        #expect(r.out.contains("msg: destination down@x: resumed"), "\(r.out)")
    }

    /// `--for` ends the suspension by itself: the time is stored with it.
    @Test func aSuspensionForADurationEnds() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            msg destinations suspend api --for 2h --reason deploy
            msg destinations --format ndjson
            msg destinations resume nobody 2>&1
            msg destinations suspend api --for 0s --reason x 2>&1; echo "exit $?"
            msg destinations suspend api 2>&1 >/dev/null | head -1; echo "exit ${PIPESTATUS[0]}"
            """)
        let entry = try JSONParser.parse(r.lines.first ?? "")
        let until = entry["suspended"]?["until"]?.stringValue.flatMap { Timestamp(rfc3339: $0) }
        let since = entry["suspended"]?["since"]?.stringValue.flatMap { Timestamp(rfc3339: $0) }
        #expect(until != nil && since != nil && until!.milliseconds - since!.milliseconds == 7_200_000, "\(r.out)")
        #expect(r.out.contains("msg: destination nobody: nothing to resume: it was not suspended, paused or open"), "\(r.out)")
        #expect(r.lines.contains("exit 64"), "a zero --for and a missing --reason are usage errors: \(r.out)")
        #expect(!r.lines.contains("exit 0"), "\(r.out)")
    }

    /// `msg flush` from cron while a destination is suspended: each run leaves where
    /// its scan stopped (`kept`) and the next starts there, sending what
    /// arrived and still saying how many wait; resumed, every held message goes, in
    /// order, none twice.
    @Test func cronFlushesPastASuspensionStartWhereTheLastStoppedAndLoseNothing() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            seq 500 | awk '{printf "{\\"to\\":\\"down@x\\",\\"body\\":\\"d%d\\"}\\n", $1}' | msg compose --enqueue > /dev/null
            msg destinations suspend down@x --reason outage 2> /dev/null
            for run in 1 2 3; do
                msg compose --to up$run@x --body u$run --enqueue > /dev/null
                msg flush --transport stdout: < /dev/null 2> flush$run.err | grep -c '"sent"'; echo "exit ${PIPESTATUS[0]}"
                sqlite3 queue.sqlite "SELECT count(*) FROM kept WHERE name LIKE 'hint:%'"
            done
            cat flush3.err
            msg destinations resume down@x 2> /dev/null
            msg flush --transport stdout: < /dev/null 2> /dev/null | grep '"sent"' | sed 's/.*"body":"\\([^"]*\\)".*/\\1/' | tr '\\n' ' '; echo
            msg queue count --status sent
            """)
        let lines = r.lines
        #expect(Array(lines.prefix(9)) == ["1", "exit 75", "1", "1", "exit 75", "1", "1", "exit 75", "1"], "each run sent the one that came: \(r.out) \(r.err)")
        #expect(r.out.contains("msg: destination down@x: suspended until msg destinations resume; 500 messages wait"), "\(r.out)")
        let resumed = (1...500).map { "d\($0)" }.joined(separator: " ") + " "
        #expect(lines.dropLast().last == resumed, "the 500 went in order: \(r.out)")
        #expect(lines.last == "503", "\(r.out)")
    }
}
