import Foundation
import MsgKit
import Testing

/// `msg shell` in a real terminal (completion, history, Ctrl-C, Ctrl-D) and as a
/// script on a plain pipe.
@Suite(.timeLimit(.minutes(3))) struct ShellTests {
    func shell(_ s: Sandbox) throws -> TerminalSession {
        try TerminalSession("cd '\(s.home)' && MSG_HOME='\(s.home)' XDG_CONFIG_HOME='\(s.home)/config' TERM=xterm '\(buildDirectory)/msg' shell")
    }

    @Test func tabCompletesCommandsOptionsStatusesAndIds() throws {
        let s = try Sandbox()
        let ids = ids(try s.sh("msg compose --to bob --body one --enqueue; msg compose --to ann --body two --enqueue").out)
        let t = try shell(s)
        // The screen drops trailing blanks: each completion's space shows in the next step.
        #expect(t.waitFor("msg sqlite:queue.sqlite>") != nil, "the prompt shows the store")
        t.send("qu", "Tab")
        #expect(t.waitFor("> queue") != nil, "qu<TAB>: \(t.screen)")
        t.send("ls --sta", "Tab")
        #expect(t.waitFor("> queue ls --status") != nil, "--sta<TAB>: \(t.screen)")
        t.send("fai", "Tab")
        #expect(t.waitFor("> queue ls --status failed") != nil, "fai<TAB>: \(t.screen)")
        t.send("C-c")
        // The shortest prefix that tells the second id from the first.
        let common = zip(ids[0], ids[1]).prefix { $0 == $1 }.count
        t.send("queue show \(ids[1].prefix(common + 1))", "Tab")
        #expect(t.waitFor("> queue show \(ids[1])") != nil, "an id from its prefix: \(t.screen)")
        t.send("Enter")
        #expect(t.waitFor("to          ann") != nil, "the command ran, its record a field a line at the terminal: \(t.screen)")
        // The short id a table shows, the id's end, completes to the whole id.
        t.send("queue show \(ids[0].suffix(8))", "Tab")
        #expect(t.waitFor("> queue show \(ids[0])") != nil, "an id from its end: \(t.screen)")
    }

    @Test func historyIsKeptBetweenRunsOwnerOnlyWithoutRepeats() throws {
        let s = try Sandbox()
        do {
            let t = try shell(s)
            t.waitFor("queue.sqlite>")
            for _ in 0..<2 { t.send("queue count", "Enter") }
            t.send("queue stats", "Enter")
            #expect(t.waitFor("queue.sqlite>", count: 4) != nil)
            t.send("C-d")
            #expect(t.waitFor("EXITED 0") != nil, "Ctrl-D exits 0: \(t.screen)")
        }
        let history = try String(contentsOfFile: s.home + "/history", encoding: .utf8)
        #expect(history.split(separator: "\n").filter { !$0.hasPrefix("_HiStOrY") } == ["queue count", "queue stats"])
        let mode = try FileManager.default.attributesOfItem(atPath: s.home + "/history")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let t = try shell(s)
        t.waitFor("queue.sqlite>")
        t.send("Up", "Up")
        #expect(t.waitFor("> queue count") != nil, "history recalled after a restart: \(t.screen)")
    }

    @Test func ctrlCStopsAWatchingFlushAndTheShellGoesOn() throws {
        let s = try Sandbox()
        _ = try s.sh("msg compose --to bob --body one --enqueue")
        let t = try shell(s)
        t.waitFor("queue.sqlite>")
        t.send("flush --watch", "Enter")
        // On a terminal a flush prints no records: the store says it ran.
        #expect(eventually(within: 20) { (try? s.sh("msg queue count --status sent").out) == "1\n" }, "the watch ran: \(t.screen)")
        t.send("C-c")
        #expect(t.waitFor("stopping (SIGINT): 1 sent, 0 left to retry, 0 dead") != nil, "Ctrl-C stopped the watch: \(t.screen)")
        #expect(!t.screen.contains("\"status\""), "no JSON on the terminal: \(t.screen)")
        t.send("queue count --status sent", "Enter")
        #expect(t.waitFor("\n1\n") != nil, "the shell went on: \(t.screen)")
        // A long flush (a slow destination, one message a batch) stops at its next batch.
        _ = try s.sh("seq 50 | awk '{print \"{\\\"to\\\":\\\"x\\\",\\\"body\\\":\\\"b\\\"}\"}' | msg compose --enqueue")
        t.send("flush --batch 1 --transport 'stdout:?latency=100ms&fd=2'", "Enter")
        #expect(eventually(within: 20) { (Int((try? s.sh("msg queue count --status sent").lines.first) ?? "") ?? 0) >= 4 }, "the long flush ran: \(t.screen)")
        t.send("C-c")
        #expect(t.waitFor("stopping (SIGINT)", count: 2) != nil, "Ctrl-C stopped the long flush: \(t.screen)")
        let left = try s.sh("msg queue count --status queued; msg queue count --status sending").lines
        #expect((Int(left.first ?? "") ?? 0) > 10 && left.last == "0", "the rest stayed queued, none sending: \(left)")
        t.send("half a line", "C-c")
        t.send("C-d")
        #expect(t.waitFor("EXITED 0") != nil, "Ctrl-C abandoned the line; Ctrl-D exits 0: \(t.screen)")
    }

    @Test func aScriptOnAPipeStopsAtItsFirstFailingLine() throws {
        let s = try Sandbox()
        let script = """
            # a comment, then commands that must not read the script as their input
            compose --to "ann lee" --body 'it''s "here"' --enqueue
            queue count
            queue ls --format csv
            retry --dead
            queue show 00000000-0000-7000-8000-000000000000
            compose --to never --body reached --enqueue

            """
        let r = try s.sh("msg shell", stdin: script)
        #expect(r.status == 65, "the status of the failing line: \(r.err)")
        #expect(r.lines.first?.contains("\"to\":\"ann lee\",\"body\":\"its \\\"here\\\"\"") == true, "\(r.out)")
        #expect(r.lines.dropFirst().first == "1", "\(r.out)")
        #expect(r.err.contains("script line 6 failed with status 65"), "\(r.err)")
        #expect(try s.sh("msg queue count").out == "1\n", "nothing after the failing line ran")
        let bad = try s.sh("msg shell", stdin: "queue ls --status nosuch\n")
        #expect(bad.status == 64 && bad.err.contains("nosuch"), "\(bad.err)")
    }
}
