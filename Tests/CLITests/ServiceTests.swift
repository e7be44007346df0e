import Foundation
import MsgKit
import MsgKitTesting
import Testing

/// One `flush --watch` is the whole service (docs/DESIGN.md 6): the config file
/// routes destinations to transports (Postfix for mail, a webhook receiver, a
/// command), one bad message never stops the queue, and an HTTP destination
/// answering 503 for a while gets every message once when it is back.
@Suite(.timeLimit(.minutes(5))) struct ServiceTests {
    /// `msg flush --watch` in the sandbox, finding the network plugins, standard
    /// error to `stderr` (nowhere when nil).
    func startWatch(_ s: Sandbox, _ env: [String: String], stderr: Pipe? = nil) throws -> TestProcess {
        let watch = TestProcess([buildDirectory + "/msg", "flush", "--watch"])
        watch.environment = ["MSG_HOME": s.home, "XDG_CONFIG_HOME": s.home + "/config", "MSG_PLUGIN_PATH": env["MSG_PLUGIN_PATH"] ?? ""]
        watch.standardOutput = FileHandle.nullDevice
        watch.standardError = stderr ?? FileHandle.nullDevice
        try watch.run()
        return watch
    }

    /// The check: 1,000 mails to Postfix, one of which has no `from` (and
    /// the transport names none): 999 sent, 1 dead saying why, the run not ended by 78.
    @Test func onePoisonMessageAmongAThousandIsDeadAndTheRestGo() throws {
        let (s, env) = try SMTPTests().sandbox()
        let postfix = try SMTPTests.Postfix(s)
        let r = try s.sh("""
            seq 1000 | awk '{ if ($1 == 500) printf "{\\"to\\":\\"u%d@example.com\\",\\"body\\":\\"m%d\\"}\\n", $1, $1; \
                else printf "{\\"to\\":\\"u%d@example.com\\",\\"from\\":\\"me@example.com\\",\\"body\\":\\"m%d\\"}\\n", $1, $1 }' | msg compose --enqueue > /dev/null
            msg flush --transport '\(postfix.url)?ca=ca.pem&concurrency=4' > /dev/null; echo $?
            msg queue count --status sent; msg queue count --status dead
            msg queue ls --status dead | grep -c 'the message has no from'
            """, env: env)
        #expect(r.lines == ["1", "999", "1", "1"], "\(r.out) \(r.err)")
        // No 78 said (the server's port, in the words, may hold those digits).
        #expect(!r.err.replacingOccurrences(of: postfix.url, with: "").contains("78"), "\(r.err)")
    }

    /// 20 mails, one without `from`, under a watch: 19 sent, 1 dead, the watch goes on.
    @Test func aWatchGoesOnPastAMessageItCannotSend() throws {
        let (s, env) = try SMTPTests().sandbox()
        let postfix = try SMTPTests.Postfix(s)
        try s.config("transport = \(postfix.url)?ca=\(s.home)/ca.pem\n")
        _ = try s.sh("""
            seq 20 | awk '{ if ($1 == 7) printf "{\\"to\\":\\"u%d@example.com\\",\\"body\\":\\"m%d\\"}\\n", $1, $1; \
                else printf "{\\"to\\":\\"u%d@example.com\\",\\"from\\":\\"me@example.com\\",\\"body\\":\\"m%d\\"}\\n", $1, $1 }' | msg compose --enqueue > /dev/null
            """, env: env)
        let err = Pipe()
        let watch = try startWatch(s, env, stderr: err)
        let done = try eventually(within: 60) { try s.sh("msg queue count --status sent", env: env).out == "19\n" }
        #expect(done)
        #expect(watch.isRunning, "the watch goes on")
        watch.signal(SIGTERM)
        try watch.wait()
        #expect(watch.terminationStatus == 0)
        let said = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(said.contains(" dead after 1 attempt: rejected: the message has no from"), "\(said)")
        #expect(try s.sh("msg queue count --status dead", env: env).out == "1\n")
    }

    /// A mail server that answers 451 to every recipient for a while (then is
    /// restarted without the rule): under the watch with the config's short cap,
    /// every mail arrives once within 20 s of the restart, none dead.
    @Test func aWatchRidesOutAMailServerAnswering451() throws {
        let (s, env) = try SMTPTests().sandbox()
        let postfix = try SMTPTests.Postfix(s)
        let etc = postfix.dir + "/etc"
        #expect(try s.sh("echo '/^/ 451 4.3.2 down for maintenance' > '\(etc)/access' && postfix -c '\(etc)' reload").status == 0)
        try s.config("transport = \(postfix.url)?ca=\(s.home)/ca.pem&from=me@example.com\nbackoff_cap = 1s\n")
        _ = try s.sh("for i in $(seq 10); do msg compose --to u$i@example.com --body m$i --enqueue; done > /dev/null", env: env)
        let watch = try startWatch(s, env)
        defer { watch.signal(SIGKILL); try? watch.wait() }
        let refused = try eventually(within: 60) {
            try s.sh("msg queue ls --status failed | grep -c '451 4.3.2 down for maintenance.*\"attempts\":[2-9]\\|\"attempts\":[2-9].*451 4.3.2'", env: env).out != "0\n"
        }
        #expect(refused, "tried again while the server answered 451")
        #expect(try s.sh("msg queue count --status sent", env: env).out == "0\n")
        // Back: the rule gone, the server restarted (its sessions closed, as a restart does).
        let back = Date()
        #expect(try s.sh(": > '\(etc)/access' && postfix -c '\(etc)' stop && postfix -c '\(etc)' start").status == 0)
        #expect(try eventually(within: 20) { try s.sh("msg queue count --status sent", env: env).out == "10\n" }, "all sent within 20 s")
        #expect(Date().timeIntervalSince(back) < 20)
        #expect(try s.sh("msg queue count --status dead", env: env).out == "0\n")
        _ = try s.sh("for i in $(seq 200); do [ \"$(ls postfix/mail/inbox/new 2>/dev/null | wc -l)\" -ge 10 ] && break; sleep 0.05; done")
        let mails = try SMTPTests().readMaildir(s, s.home + "/postfix/mail/inbox")
        #expect(mails.count == 10 && Set(mails.map { $0["id"] ?? "" }).count == 10, "each once: \(mails.count)")
    }

    /// One watch, one config file: mail to Postfix, webhooks to an HTTP receiver
    /// that answers 503 until it is back, the rest to a command; `msg destinations`
    /// says which transport each takes. Every message arrives once, none is dead.
    @Test func oneWatchServesMailWebhooksAndCommandsFromOneConfig() throws {
        let (s, env) = try SMTPTests().sandbox()
        let postfix = try SMTPTests.Postfix(s)
        let hooks = try HostileDestinationTests.Receiver(s)
        let command = try s.file("deliver.sh", "#!/bin/sh\necho \"$MSG_ID\" >> \(s.home)/commands\n")
        chmod(command, 0o755)
        try s.config("""
            transport = exec:\(command)
            backoff_cap = 1s
            [destination *@example.com]
            transport = \(postfix.url)?ca=\(s.home)/ca.pem&from=me@example.com
            [destination hooks.*]
            transport = \(hooks.base)/down/\(s.home)/up
            """)
        let r = try s.sh("""
            for i in 1 2 3; do
                msg compose --to ann$i@example.com --body "mail $i" --enqueue
                msg compose --to hooks.orders --body "hook $i" --enqueue
                msg compose --to pager --body "page $i" --enqueue
            done > /dev/null
            msg destinations --format json
            """, env: env)
        let table = r.out
        #expect(table.contains("\"destination\":\"hooks.orders\",\"transport\":\"\(hooks.base)/down/\(s.home)/up\""), "\(table)")
        #expect(table.contains("\"destination\":\"pager\",\"transport\":\"exec:\(command)\""), "\(table)")
        #expect(table.contains("\"destination\":\"ann1@example.com\",\"transport\":\"\(postfix.url)\""), "shown without its parameters: \(table)")
        let watch = try startWatch(s, env)
        defer { watch.signal(SIGKILL); try? watch.wait() }
        // Mail and commands go; the webhooks wait out the 503s.
        #expect(try eventually(within: 60) { try s.sh("msg queue count --status sent", env: env).out == "6\n" })
        #expect(try eventually(within: 30) { try hooks.requests().filter { ($0["path"] as? String)?.hasPrefix("/down/") == true }.count >= 6 },
                "the webhooks were tried again while down")
        #expect(try s.sh("msg queue count --status failed", env: env).out == "3\n")
        _ = try s.file("up", "")
        #expect(try eventually(within: 20) { try s.sh("msg queue count --status sent", env: env).out == "9\n" }, "back within 20 s")
        watch.signal(SIGTERM)
        try watch.wait()
        #expect(watch.terminationStatus == 0)
        #expect(try s.sh("msg queue count --status dead", env: env).out == "0\n")
        let applied = try hooks.requests().filter { $0["applied"] as? Bool == true }.compactMap { $0["key"] as? String }
        #expect(applied.count == 3 && Set(applied).count == 3, "each webhook applied once: \(applied)")
        let commands = try String(contentsOfFile: s.home + "/commands", encoding: .utf8).split(separator: "\n")
        #expect(commands.count == 3 && Set(commands).count == 3)
        _ = try s.sh("for i in $(seq 200); do [ \"$(ls postfix/mail/inbox/new 2>/dev/null | wc -l)\" -ge 3 ] && break; sleep 0.05; done")
        let mails = try SMTPTests().readMaildir(s, s.home + "/postfix/mail/inbox")
        #expect(mails.count == 3 && Set(mails.map { $0["id"] ?? "" }).count == 3, "\(mails)")
    }
}
