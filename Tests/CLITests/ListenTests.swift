import Foundation
import MsgKit
import MsgKitTesting
import MsgSupport
import Testing

/// `msg listen` and `tcp://` through the real binaries: many senders, hostile
/// input, tokens, and kills on either side between delivery and acknowledgement.
@Suite(.timeLimit(.minutes(3))) struct ListenTests {
    /// How many times each id is in the inbox (new/ and cur/).
    func inbox(_ s: Sandbox, _ name: String = "inbox") -> [String: Int] {
        var seen: [String: Int] = [:]
        for sub in ["new", "cur"] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: "\(s.home)/\(name)/\(sub)")) ?? []
            for n in names where n.hasSuffix(".json") { seen[String(n.dropLast(5)), default: 0] += 1 }
        }
        return seen
    }

    /// What is wrong with `seen` against "each of `expected` exactly once", or "".
    func onceEach(_ seen: [String: Int], _ expected: [String]) -> String {
        let missing = expected.filter { seen[$0] == nil }.count
        let twice = seen.values.filter { $0 > 1 }.count
        let unknown = Set(seen.keys).subtracting(expected).count
        return missing + twice + unknown == 0 ? "" : "\(missing) of \(expected.count) missing, \(twice) delivered twice, \(unknown) unexpected"
    }

    /// Stores `count` new messages in `store` and returns their ids.
    func enqueue(_ s: Sandbox, _ count: Int, store: String = "") throws -> [String] {
        let option = store.isEmpty ? "" : "--store \(store)"
        let r = try s.sh("seq \(count) | awk '{printf \"{\\\"to\\\":\\\"u%d\\\",\\\"body\\\":\\\"m%d\\\"}\\n\", $1, $1}' | msg compose --enqueue \(option)")
        #expect(r.status == 0, "\(r.err)")
        return ids(r.out)
    }

    func record(_ s: Sandbox) throws -> String {
        try s.sh("msg compose --to bob --body hello").out.trimmingCharacters(in: .newlines)
    }

    @Test func manySendersAtOnceEachMessageOnce() throws {
        let s = try Sandbox()
        let listener = try ListenerProcess(s)
        var all: [String] = []
        for n in 0..<6 { all += try enqueue(s, 300, store: "sqlite:q\(n).sqlite") }
        let r = try s.sh("""
            for n in 0 1 2 3 4 5; do msg flush --store sqlite:q$n.sqlite --transport '\(listener.url)?window=16' > /dev/null & done
            fails=0; for job in $(jobs -p); do wait $job || fails=$((fails+1)); done; echo $fails
            for n in 0 1 2 3 4 5; do msg queue count --status sent --store sqlite:q$n.sqlite </dev/null; done
            """)
        #expect(r.lines == ["0"] + Array(repeating: "300", count: 6), "\(r.err)")
        #expect(onceEach(inbox(s), all) == "", "the inbox")
        let stopped = listener.stop()
        #expect(stopped.status == 0 && stopped.stderr.contains("stopping (SIGTERM)"), "\(stopped)")
    }

    /// `idle=`: a connection that sends nothing for that long, with nothing owed to
    /// it, is closed, whether it never spoke or was answered; one that keeps sending
    /// stays open; a bad value is a configuration error.
    @Test func idleConnectionsAreClosedAfterTheIdleLimit() throws {
        let s = try Sandbox()
        let listener = try ListenerProcess(s, address: "tcp://127.0.0.1:0?idle=500ms", ["--into", "file:\(s.home)/inbox"])
        let silent = try LineClient(port: listener.port)
        let answered = try LineClient(port: listener.port)
        let one = try record(s)
        try answered.send(one + "\n")
        #expect(silent.closedByPeer(within: 10), "a silent connection is closed")
        #expect(answered.closedByPeer(within: 10), "an answered one, once idle, is closed")
        #expect(inbox(s).count == 1, "what it sent was delivered")
        // One that sends more often than the limit, for twice the limit, stays open.
        let busy = try LineClient(port: listener.port)
        for _ in 0..<5 {
            try busy.send(one + "\n")
            usleep(200_000)
            #expect(busy.isOpen(), "a connection in use stays open")
        }
        _ = listener.stop()
        let bad = try s.sh("msg listen 'tcp://127.0.0.1:0?idle=5' --into file:inbox 2>&1; echo \"exit $?\"")
        #expect(bad.lines.last == "exit 78" && bad.out.contains("idle"), "\(bad.out)")
    }

    /// `flush --watch` keeps its connection between messages; when the receiver is
    /// restarted meanwhile, the next message goes over a new connection at its first
    /// attempt, not into the closed one (which failed it, to be retried after backoff).
    @Test func aWatchSendsThroughARestartedReceiverAtTheFirstAttempt() throws {
        let s = try Sandbox()
        let first = try ListenerProcess(s, ["--into", "file:\(s.home)/inbox"])
        let port = first.port
        let watch = TestProcess()
        watch.executableURL = URL(fileURLWithPath: buildDirectory + "/msg")
        watch.arguments = ["flush", "--watch", "--transport", "tcp://127.0.0.1:\(port)"]
        watch.environment = ["MSG_HOME": s.home, "XDG_CONFIG_HOME": s.home + "/config"]
        watch.standardInput = FileHandle.nullDevice
        watch.standardOutput = FileHandle.nullDevice
        watch.standardError = FileHandle.nullDevice
        try watch.run()
        defer { if watch.isRunning { kill(watch.processIdentifier, SIGKILL); try? watch.wait() } }
        func delivered(_ n: Int) -> Bool {
            let until = Date().addingTimeInterval(20)
            while Date() < until {
                if inbox(s).count >= n { return true }
                usleep(20_000)
            }
            return false
        }
        let one = try enqueue(s, 1)
        #expect(delivered(1), "the first message arrived")
        #expect(first.stop().status == 0)
        let second = try ListenerProcess(s, address: "tcp://127.0.0.1:\(port)", ["--into", "file:\(s.home)/inbox"])
        let two = try enqueue(s, 1)
        #expect(delivered(2), "the second message arrived through the restarted receiver")
        kill(watch.processIdentifier, SIGTERM)
        try watch.wait()
        _ = second.stop()
        #expect(onceEach(inbox(s), one + two) == "")
        let events = try s.sh("msg queue ls --history | grep -o '\"event\":\"[a-z]*\"' | sort | uniq -c | tr -s ' '")
        #expect(events.lines == [" 2 \"event\":\"attempt\"", " 2 \"event\":\"queued\"", " 2 \"event\":\"sent\""], "one attempt each, none failed: \(events.out)")
    }

    @Test func aClientKilledMidLineDeliversNothingOfIt() throws {
        let s = try Sandbox()
        let listener = try ListenerProcess(s)
        let half = try record(s)
        let whole = try record(s)
        do {
            let killed = try LineClient(port: listener.port)
            try killed.send(String(half.prefix(half.count / 2)))
        }  // closed without a newline, as by SIGKILL
        let client = try LineClient(port: listener.port)
        try client.send(whole + "\n")
        client.finishSending()
        let answers = try client.answers()
        #expect(answers.count == 1 && answers[0]["ok"] == .bool(true), "\(answers)")
        #expect(inbox(s) == [String(ids(whole)[0]): 1])
    }

    @Test func hostileInputGetsNegativeAcksInBoundedMemory() throws {
        let s = try Sandbox()
        let listener = try ListenerProcess(s)
        let before = try listener.peakMemoryKiB()
        let client = try LineClient(port: listener.port)
        // A 10 MiB line, then binary garbage, then a good record and a lookup of it.
        try client.send([UInt8](repeating: UInt8(ascii: "x"), count: 10 << 20) + [0x0A])
        var rng = SplitMix64(seed: 42)
        var garbage = (0..<65536).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        garbage.append(0x0A)
        try client.send(garbage)
        let good = try record(s)
        let id = ids(good)[0]
        try client.send(good + "\n{\"op\":\"lookup\",\"id\":\"\(id)\"}\n")
        client.finishSending()
        let answers = try client.answers()
        let lines = 1 + garbage.filter { $0 == 0x0A }.count + 2
        #expect(answers.count == lines, "one answer per line")
        #expect(answers.dropLast(2).allSatisfy { $0["ok"] == .bool(false) && $0["error"]?["code"] == .string("rejected") })
        #expect(answers[0]["error"]?["message"]?.stringValue?.contains("over the limit of \(RecordLimits.maxDeliveredBytes)") == true, "\(answers[0])")
        #expect(answers[lines - 2] == (try JSONParser.parse("{\"id\":\"\(id)\",\"ok\":true}")))
        #expect(answers[lines - 1] == (try JSONParser.parse("{\"id\":\"\(id)\",\"delivered\":true}")))
        #expect(inbox(s) == [id: 1])
        let grew = try listener.peakMemoryKiB() - before
        #expect(grew < 8 * 1024, "a 10 MiB line grew the listener by \(grew) KiB")
    }

    @Test func aWrongTokenIsRefusedAndNothingDelivered() throws {
        let s = try Sandbox()
        let listener = try ListenerProcess(s, address: "tcp://127.0.0.1:0?token=s3cret")
        let wrong = try LineClient(port: listener.port)
        try wrong.send("{\"op\":\"hello\",\"version\":1,\"token\":\"guess\"}\n\(try record(s))\n")
        let refused = try wrong.answers()  // the receiver closes after its answer
        #expect(refused.count == 1 && refused[0]["ok"] == .bool(false), "\(refused)")
        let none = try LineClient(port: listener.port)
        try none.send(try record(s) + "\n")
        #expect(try none.answers().first?["error"]?["message"]?.stringValue?.contains("needs a token") == true)

        let queued = try enqueue(s, 5)
        // A refused token is a configuration error: nothing is attempted or counted,
        // the messages stay queued as they were, and flush (even --watch) stops with 78.
        let r = try s.sh("""
            msg flush --transport '\(listener.url)?token=guess' > /dev/null; echo $?
            msg flush --watch --transport '\(listener.url)?token=guess' > /dev/null; echo $?
            msg queue count --status queued </dev/null
            msg queue ls | grep -c '"attempts":0'
            """)
        #expect(r.lines == ["78", "78", "5", "5"], "\(r.out)\(r.err)")
        #expect(r.err.contains("refused the connection: receiver: wrong or missing token; check the token"), "\(r.err)")
        #expect(inbox(s).isEmpty)
        let ok = try s.sh("msg flush --transport '\(listener.url)?token=s3cret' > /dev/null; echo $?")
        #expect(ok.out == "0\n", "\(ok.err)")
        #expect(onceEach(inbox(s), queued) == "", "the inbox")
    }

    /// A listener other hosts can reach says so, and without a token starts only
    /// when told to; a token can come from a file only its owner reads, or from
    /// MSG_LISTEN, and then it is not in /proc/PID/cmdline.
    @Test func aListenerOthersCanReachSaysSoAndKeepsItsTokenOutOfArgv() throws {
        let s = try Sandbox()
        let refused = try s.sh("""
            msg listen tcp://0.0.0.0:0; echo "open $?"
            umask 022; echo s3cret > loose; msg listen 'tcp://127.0.0.1:0?token_file=loose'; echo "loose $?"
            """)
        #expect(refused.lines == ["open 78", "loose 78"], "\(refused.err)")
        #expect(refused.err.contains("can be reached from other hosts and needs no token") && refused.err.contains("--no-token"), "\(refused.err)")
        #expect(refused.err.contains("token file loose can be read by others; chmod 0600 it"), "\(refused.err)")

        let open = try ListenerProcess(s, address: "tcp://0.0.0.0:0", ["--no-token"])
        #expect(open.saidAtStart.contains("can be reached from other hosts and takes records without a token"), "\(open.saidAtStart)")
        _ = open.stop()

        _ = try s.file("token", "t0ps3cret\n")
        chmod(s.home + "/token", 0o600)
        let listener = try ListenerProcess(s, address: nil, environment: ["MSG_LISTEN": "tcp://0.0.0.0:0?token_file=\(s.home)/token"])
        let cmdline = try String(contentsOfFile: "/proc/\(listener.process.processIdentifier)/cmdline", encoding: .utf8)
        #expect(!cmdline.contains("t0ps3cret") && !cmdline.contains("token"), "\(cmdline)")
        #expect(listener.saidAtStart.contains("can be reached from other hosts") && !listener.saidAtStart.contains("without a token"))
        let queued = try enqueue(s, 3)
        let port = listener.port
        let r = try s.sh("msg flush --transport 'tcp://127.0.0.1:\(port)?token_file=\(s.home)/token' > /dev/null; echo $?")
        #expect(r.out == "0\n", "\(r.err)")
        #expect(!r.err.contains("clear text"), "no warning to a loopback address: \(r.err)")
        #expect(onceEach(inbox(s), queued) == "", "the inbox")
        // To an address that is not loopback, the token in clear text is warned about,
        // once a command however many connections it opens.
        _ = try enqueue(s, 4)
        let far = try s.sh("msg flush --concurrency 2 --transport 'tcp://0.0.0.0:\(port)?token_file=\(s.home)/token' > /dev/null; echo $?")
        #expect(far.out == "0\n", "\(far.err)")
        #expect(far.err.components(separatedBy: "is sent its token in clear text").count == 2, "warned once: \(far.err)")
        #expect(far.err.contains("msg: warning: tcp://0.0.0.0:\(port) is sent its token in clear text") && !far.err.contains("t0ps3cret"), "\(far.err)")
    }

    /// With a token, connections that never say hello are closed after 5 s, one
    /// address may hold 32 that have said nothing (64 in all), and each refusal
    /// is said (at most five lines a second): to the sender too, whose flush says
    /// in words that the receiver is at its limit and keeps the message for
    /// later (75).
    @Test func idleConnectionsAreCappedAndClosedAndRefusalsAreSaid() throws {
        let s = try Sandbox()
        let listener = try ListenerProcess(s, address: "tcp://127.0.0.1:0?token=s3cret")
        let clients = try (0..<70).map { _ in try LineClient(port: listener.port) }
        let capped = try LineClient(port: listener.port)
        try capped.send("{\"op\":\"hello\",\"version\":1,\"token\":\"s3cret\"}\n")
        let refusal = try capped.answers()
        #expect(refusal.count == 1 && refusal.first?["ok"] == .bool(false) && refusal.first?["error"]?["retryable"] == .bool(true),
                "a hello past the cap is refused in words, to try again: \(refusal)")
        _ = try enqueue(s, 1)
        let flush = try s.sh("msg flush --transport 'tcp://127.0.0.1:\(listener.port)?token=s3cret' > /dev/null; echo $?; msg queue count --status failed")
        #expect(flush.lines == ["75", "1"], "\(flush.out) \(flush.err)")
        #expect(flush.err.contains("refused the connection for now (receiver: at its limit: this address has 32 connections that have sent nothing yet, the most one address may have); trying again later"),
                "\(flush.err)")
        // None said hello: the 33rd and later are closed soon, the first 32 after
        // the hello deadline, all without an answer.
        for (i, client) in clients.enumerated() {
            #expect(try client.answers().isEmpty, "connection \(i) was closed without an answer")
        }
        let wrong = try LineClient(port: listener.port)
        try wrong.send("{\"op\":\"hello\",\"version\":1,\"token\":\"guess\"}\n")
        #expect(try wrong.answers().first?["ok"] == .bool(false))
        let stopped = listener.stop()
        #expect(stopped.stderr.contains("refused a connection from 127.0.0.1: it has 32 connections that have sent nothing yet, the most one address may have"), "\(stopped.stderr)")
        #expect(stopped.stderr.contains("closed a connection from 127.0.0.1: no hello within 5s"), "\(stopped.stderr)")
        #expect(stopped.stderr.contains("more refusals"), "more than five a second are counted, not each said: \(stopped.stderr)")
        #expect(stopped.stderr.contains("refused a connection from 127.0.0.1: a wrong token") || stopped.stderr.contains("more refusals"))
    }

    /// The stop summary counts records delivered, not acknowledgements: a record sent
    /// again is acknowledged without a second delivery and counted apart.
    @Test func theStopSummaryCountsEachRecordOnceAndNamesTheSink() throws {
        let s = try Sandbox()
        let listener = try ListenerProcess(s, ["--into", "file:\(s.home)/in"])
        let one = try record(s)
        let client = try LineClient(port: listener.port)
        try client.send("\(one)\n\(try record(s))\n")
        client.finishSending()
        #expect(try client.answers().count == 2)
        let again = try LineClient(port: listener.port)
        try again.send("\(one)\n")
        again.finishSending()
        #expect(try again.answers().count == 1)
        let stopped = listener.stop()
        #expect(stopped.stderr.contains("stopped: 2 records delivered into file:\(s.home)/in; 1 sent again were acknowledged without a second delivery"),
                "\(stopped.stderr)")
    }

    @Test func senderKilledAfterDeliveryIsRecoveredByLookup() throws {
        let s = try Sandbox()
        let listener = try ListenerProcess(s)
        let queued = try enqueue(s, 200)
        let t = "--transport \(listener.url)"
        let r = try s.sh("MSG_FAULT=after-delivery:100 msg flush --batch 64 \(t) > /dev/null; echo $?; msg recover --stale-after 0s \(t) > /dev/null; msg flush \(t) > /dev/null; echo $?; msg queue count --status sent")
        #expect(r.lines == ["137", "0", "200"], "\(r.err)")
        #expect(r.err.contains("64 already delivered (sent)"), "recover asked the receiver: \(r.err)")
        #expect(onceEach(inbox(s), queued) == "", "the inbox")
    }

    @Test func receiverKilledMidFlushThenRetriedDeliversEachOnce() throws {
        let s = try Sandbox()
        let queued = try enqueue(s, 2000)
        var listener = try ListenerProcess(s)
        let url = listener.url
        let p = TestProcess()
        p.executableURL = URL(fileURLWithPath: buildDirectory + "/msg")
        p.arguments = ["flush", "--batch", "64", "--transport", url]
        p.environment = ["MSG_HOME": s.home, "XDG_CONFIG_HOME": s.home + "/config"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        // Kill the receiver once part of the flush is in its inbox: whatever it had
        // delivered but not yet acked is in doubt for the sender.
        while inbox(s).count < 500 && p.isRunning { usleep(5000) }
        _ = listener.stop(SIGKILL)
        try p.wait()
        #expect(p.terminationStatus == 75, "the sender saw the receiver go")
        listener = try ListenerProcess(s, address: url)
        let r = try s.sh("msg retry --now --transport \(url) > /dev/null; msg flush --transport \(url) > /dev/null; echo $?; msg queue count --status sent")
        #expect(r.lines == ["0", "2000"], "\(r.err)")
        #expect(onceEach(inbox(s), queued) == "", "the inbox")
    }
}
