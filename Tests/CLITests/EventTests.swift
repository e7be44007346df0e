import Foundation
import MsgKit
import Testing

/// `--events FILE` and `--on-event CMD` (#27), through the real binary: one NDJSON
/// event per state change worth telling, to a file and to a command that gets it on
/// stdin with MSG_EVENT, MSG_DESTINATION and MSG_ID; a failing command is reported
/// and changes nothing else.
@Suite(.timeLimit(.minutes(2))) struct EventTests {
    @Test func deadMessagesAndBreakerChangesAreTold() throws {
        let s = try Sandbox()
        _ = try s.file("hook", "#!/bin/sh\nline=$(cat)\necho \"$MSG_EVENT $MSG_DESTINATION $MSG_ID $line\" >> hook.log\n[ \"$MSG_EVENT\" = dead ] && exit 3\nexit 0\n")
        let r = try s.sh("""
            chmod +x hook
            (for i in 1 2; do echo '{"to":"down","body":"'$i'"}'; done) | msg compose --enqueue > /dev/null
            msg flush --breaker 2 --transport 'stdout:?fd=3&fail_to=down' --events ev.ndjson 3>/dev/null > /dev/null 2> first.err; echo "exit $?"
            echo '{"to":"gone","body":"g"}' | msg compose --enqueue > in.ndjson
            msg flush --transport 'stdout:?fd=3&fail_to=gone&error=rejected' --on-event "$PWD/hook" 3>/dev/null > /dev/null 2> second.err; echo "exit $?"
            cat ev.ndjson; echo ---; cat hook.log; echo ---; cat second.err
            """)
        let parts = r.out.components(separatedBy: "---\n")
        #expect(r.lines.prefix(2) == ["exit 75", "exit 1"], "\(r.out) \(r.err)")
        let events = try parts[0].split(separator: "\n").dropFirst(2).map { try JSONParser.parse(String($0)) }
        #expect(events.count == 1 && events.first?["event"]?.stringValue == "breaker_opened", "\(parts[0])")
        #expect(events.first?["destination"]?.stringValue == "down" && events.first?["error"]?["code"]?.stringValue == "remote", "\(parts[0])")
        let hook = parts.count > 1 ? parts[1] : ""
        let gone = try records(try String(contentsOfFile: s.home + "/in.ndjson", encoding: .utf8)).first { $0.to == "gone" }
        #expect(hook.hasPrefix("dead gone \(gone?.id ?? "?") {\"event\":\"dead\""), "\(hook)")
        #expect(hook.contains("\"id\":\"\(gone?.id ?? "?")\",\"status\":\"dead\",\"attempts\":1,\"error\":{\"code\":\"rejected\""), "\(hook)")
        #expect(parts.count > 2 && parts[2].contains("msg: --on-event for dead of gone: exited 3; not retried"), "\(r.out)")
    }

    /// Suspending and resuming are told too; a file that cannot be opened is a
    /// configuration error before anything changes.
    @Test func suspendAndResumeAreTold() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            msg destinations suspend api --for 1h --reason deploy --events ev.ndjson 2>/dev/null
            msg destinations resume api --events ev.ndjson 2>/dev/null
            cut -d, -f1 ev.ndjson
            msg destinations suspend api --reason x --events /nonexistent/dir/ev 2>&1; echo "exit $?"
            msg destinations --format ndjson | grep -c suspended
            """)
        #expect(r.lines.prefix(2) == ["{\"event\":\"suspended\"", "{\"event\":\"resumed\""], "\(r.out)")
        #expect(r.lines.contains("exit 78") && r.lines.last == "0", "\(r.out)")
    }

    /// The file gets every event as it happens, whatever the hook does (#33): 40
    /// messages die while the hook is blocked, and all 40 are in the file before it
    /// runs once; then the hook runs for each.
    @Test func aSlowHookLosesNoEventOfTheFile() throws {
        let s = try Sandbox()
        _ = try s.file("hook", "#!/bin/sh\nwhile [ ! -e go ]; do sleep 0.05; done\ncat > /dev/null\necho \"$MSG_ID\" >> ran\n")
        let r = try s.sh("""
            chmod +x hook
            seq 40 | awk '{printf "{\\"to\\":\\"u%d\\",\\"body\\":\\"b\\"}\\n", $1}' | msg compose --enqueue > /dev/null
            msg flush --transport 'stdout:?fd=3&fail=1&error=rejected' --events ev.ndjson --on-event "$PWD/hook" 3>/dev/null > /dev/null 2> flush.err < /dev/null &
            flush=$!
            until [ "$(cat ev.ndjson 2>/dev/null | wc -l)" -ge 40 ]; do kill -0 $flush 2>/dev/null || break; sleep 0.02; done
            grep -c '"event":"dead"' ev.ndjson
            test -e ran && echo "the hook ran first" || echo "the hook has not run"
            touch go
            wait $flush; echo "exit $?"
            wc -l < ran
            cat flush.err | grep -c 'did not run'
            """)
        #expect(r.lines == ["40", "the hook has not run", "exit 1", "40", "0"], "\(r.out) \(r.err)")
    }

    /// `destinations suspend ''` names no destination: refused.
    @Test func anEmptyDestinationIsRefused() throws {
        let s = try Sandbox()
        let r = try s.sh("msg destinations suspend '' --reason x 2>&1; echo \"exit $?\"")
        #expect(r.lines == ["msg: the destination must not be empty (see msg destinations suspend --help)", "exit 64"], "\(r.out)")
    }
}
