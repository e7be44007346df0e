import Foundation
import MsgKit
import MsgKitTesting
import Testing

/// `smtp://` and `smtps://` through the real binary: against Debian's Postfix on
/// loopback (scripts/postfix: a real MTA, STARTTLS, PIPELINING, SMTPUTF8, into a
/// Maildir read back with Python's email package), and against aiosmtpd with
/// faults (scripts/smtp-server).
@Suite(.timeLimit(.minutes(5))) struct SMTPTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized.path

    /// A sandbox with TLSTests' certificates and the environment that finds the plugin.
    func sandbox() throws -> (Sandbox, [String: String]) {
        guard let plugins = ProcessInfo.processInfo.environment["MSG_TEST_NETWORK_PLUGINS"] else {
            Issue.record("the smtp:// tests need the plugin scripts/test builds (MSG_TEST_NETWORK_PLUGINS); run scripts/test")
            throw MsgError(.config, "no network plugins")
        }
        let s = try Sandbox()
        try TLSTests().makeCertificates(s)
        return (s, ["MSG_PLUGIN_PATH": plugins])
    }

    /// A private Postfix with STARTTLS, stopped when the test ends.
    final class Postfix {
        let dir: String
        let url: String
        /// Kept so the sandbox, and the directory Postfix runs in, outlive it.
        private let sandbox: Sandbox
        init(_ s: Sandbox) throws {
            sandbox = s
            dir = s.home + "/postfix"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let r = try s.sh("'\(SMTPTests.repository)/scripts/postfix' start '\(dir)' server.pem server-key.pem")
            guard r.status == 0, let port = r.lines.last else { throw MsgError(.unavailable, "postfix did not start: \(r.err)") }
            url = "smtp://127.0.0.1:\(port)"
        }
        deinit {
            let p = TestProcess()
            p.executableURL = URL(fileURLWithPath: SMTPTests.repository + "/scripts/postfix")
            p.arguments = ["stop", dir]
            try? p.run()
            try? p.wait()
        }
    }

    /// scripts/smtp-server, killed when released.
    final class FaultServer {
        let process = TestProcess()
        let url: String
        init(_ s: Sandbox, _ arguments: [String] = [], scheme: String = "smtp") throws {
            process.executableURL = URL(fileURLWithPath: SMTPTests.repository + "/scripts/smtp-server")
            process.arguments = ["--maildir", s.home + "/faults"] + arguments
            process.currentDirectoryURL = URL(fileURLWithPath: s.home)
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            var line = Data()
            while let b = try out.fileHandleForReading.read(upToCount: 1), !b.isEmpty, b != Data([10]) { line += b }
            let port = String(decoding: line, as: UTF8.self).replacingOccurrences(of: "listening on ", with: "")
            guard Int(port) != nil else { throw MsgError(.unavailable, "smtp-server did not start") }
            url = "\(scheme)://127.0.0.1:\(port)"
        }
        deinit {
            kill(process.processIdentifier, SIGKILL)
            try? process.wait()
        }
    }

    /// Python's email package reads each mail of a Maildir: one JSON object a mail
    /// with its Message-ID, Subject, From and To decoded, the From line as it
    /// arrived, and its body's text.
    func readMaildir(_ s: Sandbox, _ dir: String) throws -> [[String: String]] {
        let r = try s.sh("""
            python3 - '\(dir)' <<'EOF'
            import email, email.policy, json, os, sys
            for sub in ("new", "cur"):
                d = os.path.join(sys.argv[1], sub)
                for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
                    raw = open(os.path.join(d, name), "rb").read()
                    m = email.message_from_bytes(raw, policy=email.policy.default)
                    rawfrom = next((l for l in raw.decode("utf-8", "replace").split("\\n") if l.startswith("From: ")), "")
                    print(json.dumps({"id": m["Message-ID"] or "", "subject": str(m["Subject"] or ""), "to": str(m["To"] or ""),
                                      "from": str(m["From"] or ""), "rawfrom": rawfrom,
                                      "body": m.get_content() if not m.is_multipart() else ""}))
            EOF
            """)
        #expect(r.status == 0, "\(r.err)")
        return try r.lines.map { line in
            let value = try JSONParser.parse(Array(line.utf8))
            var out: [String: String] = [:]
            for key in ["id", "subject", "to", "from", "rawfrom", "body"] { out[key] = value[key]?.stringValue ?? "" }
            return out
        }
    }

    @Test func mailToPostfixArrivesAsWrittenAndInjectionsNever() throws {
        let (s, env) = try sandbox()
        let postfix = try Postfix(s)
        let long = String(repeating: "lang ", count: 300)
        let r = try s.sh("""
            msg compose --to ann@example.com --from 'Jürgen Müller <me@example.com>' --header 'Subject=Grüße aus Köln' --body 'Schöne Grüße
            .a line with a dot
            bye' --enqueue | cut -c8-43 > ids
            msg compose --to jörg@example.com --from me@example.com --header 'Subject=plain' --body '\(long)' --enqueue | cut -c8-43 >> ids
            msg compose --to bob@example.com --from me@example.com --header 'Subject=Invoice
            Reply-To: attacker@evil.example' --body x --enqueue > /dev/null
            msg compose --to 'bob@example.com
            Bcc: victim@example.com' --from me@example.com --body x --enqueue > /dev/null
            msg compose --to bob@example.com --from 'me@example.com
            Cc: victim@example.com' --body x --enqueue > /dev/null
            msg compose --to bob@example.com --from me@example.com --header "X-$(printf 'n%.0s' $(seq 1200))=v" --body x --enqueue > /dev/null
            msg flush --transport '\(postfix.url)?ca=ca.pem' > /dev/null; echo $?
            msg queue count --status sent; msg queue count --status dead
            """, env: env)
        #expect(r.lines == ["1", "2", "4"], "\(r.out) \(r.err)")
        let dead = try s.sh("msg queue ls --status dead | grep -c 'line break or NUL'")
        #expect(dead.out == "3\n", "each injection is dead with its reason: \(dead.out)")
        let longName = try s.sh("msg queue ls --status dead | grep -c 'header name of 1202 octets'")
        #expect(longName.out == "1\n", "a name that cannot be folded into 998 octets is dead before anything is sent: \(longName.out)")
        // Postfix hands the mail to its virtual agent after the 250: wait until both are in.
        _ = try s.sh("for i in $(seq 200); do [ \"$(ls postfix/mail/inbox/new | wc -l)\" = 2 ] && break; sleep 0.05; done")
        let mails = try readMaildir(s, s.home + "/postfix/mail/inbox")
        let ids = try String(contentsOfFile: s.home + "/ids", encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(mails.count == 2, "\(mails)")
        let byID = Dictionary(uniqueKeysWithValues: mails.map { ($0["id"] ?? "", $0) })
        let german = byID["<\(ids.first ?? "")@msg>"]
        #expect(german?["subject"] == "Grüße aus Köln", "\(mails)")
        // The display name as an encoded word, the address as it is (RFC 2047 5(3)).
        #expect(german?["rawfrom"] == "From: =?UTF-8?B?SsO8cmdlbiBNw7xsbGVy?= <me@example.com>", "\(mails)")
        #expect(german?["from"] == "Jürgen Müller <me@example.com>", "\(mails)")
        #expect(german?["body"] == "Schöne Grüße\n.a line with a dot\nbye\n", "dot-stuffed on the wire, not in the mail: \(mails)")
        let utf8 = byID["<\(ids.last ?? "")@msg>"]
        #expect(utf8?["to"] == "jörg@example.com" && utf8?["body"] == long + "\n", "SMTPUTF8 and a line of 1,500 octets: \(mails)")
        // Postfix logs the session's end (with what it used) after its last reply.
        _ = try s.sh("for i in $(seq 200); do grep -q 'disconnect from.*ehlo=' postfix/maillog && break; sleep 0.05; done")
        let log = try String(contentsOfFile: s.home + "/postfix/maillog", encoding: .utf8)
        #expect(!log.contains("attacker") && !log.contains("victim"), "no injected address reached the server")
        #expect(log.contains("starttls=1"), "STARTTLS was used: \(log)")
    }

    @Test func repliesAreDeliveryClasses() throws {
        let (s, env) = try sandbox()
        let server = try FaultServer(s, ["--tls", "server.pem", "server-key.pem"])
        let r = try s.sh("""
            for to in ok rcpt-550 rcpt-450 data-554 data-451 data-421 drop slow-3000 ok2; do
              msg compose --to $to@example.com --from me@example.com --body x --enqueue > /dev/null
            done
            msg flush --deadline 1s --transport '\(server.url)?ca=ca.pem' > /dev/null; echo $?
            msg queue ls --format csv | cut -d, -f2,4 | sort
            """, env: env)
        #expect(r.lines == ["1", "dead,data-554@example.com", "dead,rcpt-550@example.com",
                            "failed,data-421@example.com", "failed,data-451@example.com", "failed,drop@example.com",
                            "failed,rcpt-450@example.com", "failed,slow-3000@example.com",
                            "sent,ok2@example.com", "sent,ok@example.com", "status,to"], "\(r.out) \(r.err)")
        let errors = try s.sh("msg queue ls --status dead,failed --history | grep -o '\"code\":\"[a-z_]*\",\"message\":\"[^\"]*\"' | sort -u")
        for said in ["\"code\":\"rejected\",\"message\":\"\(server.url) answered RCPT TO <rcpt-550@example.com> with 550 5.1.1",
                     "\"code\":\"remote\",\"message\":\"\(server.url) answered RCPT TO <rcpt-450@example.com> with 450 4.1.1",
                     "\"code\":\"rejected\",\"message\":\"\(server.url) answered the mail with 554 5.6.0",
                     "\"code\":\"timeout\"", "it may have been delivered (a resend has the same Message-ID)"] {
            #expect(errors.out.contains(said), "\(said): \(errors.out)")
        }
        #expect(try s.sh("ls faults/new | wc -l").out == "2\n", "only the two taken")
    }

    /// `concurrency=4`: four sessions talk at once (the server sees four mails in
    /// its hands together), whatever the number of cores.
    @Test func concurrencyIsSessionsAtOnce() throws {
        let (s, env) = try sandbox()
        let server = try FaultServer(s, ["--tls", "server.pem", "server-key.pem"])
        let r = try s.sh("""
            seq 8 | awk '{printf "{\\"to\\":\\"slow-300@d%d.example\\",\\"from\\":\\"me@example.com\\",\\"body\\":\\"x\\"}\\n", $1}' | msg compose --enqueue > /dev/null
            msg flush --transport '\(server.url)?ca=ca.pem&concurrency=4' > /dev/null; echo $?
            msg queue count --status sent
            python3 -c 'import json,sys; print(max(json.loads(l)["peak"] for l in open("faults/log")))'
            """, env: env)
        #expect(r.lines == ["0", "8", "4"], "\(r.out) \(r.err)")
    }

    @Test func whatRetryingCannotMendStopsTheRunAndSendsNothing() throws {
        let (s, env) = try sandbox()
        let plain = try FaultServer(s, ["--no-starttls"])
        let tls = try FaultServer(s, ["--tls", "server.pem", "server-key.pem", "--auth", "ann:s3cret"])
        let implicit = try FaultServer(s, ["--tls", "server.pem", "server-key.pem", "--implicit-tls"], scheme: "smtps")
        _ = try s.sh("printf 's3cret\\n' > pw; printf 'wrong\\n' > bad; chmod 600 pw bad", env: env)
        let cases: [(String, String)] = [
            (plain.url, "does not offer STARTTLS"),
            ("\(tls.url)?ca=other-ca.pem&user=ann&password_file=pw", "its certificate is not signed by a CA msg trusts"),
            ("\(tls.url)?ca=ca.pem&server_name=mail.example", "its certificate is not for mail.example"),
            ("\(tls.url)?ca=ca.pem&user=ann&password_file=bad", "refused AUTH as ann: 535"),
            ("\(tls.url)?ca=ca.pem&tls=none&user=ann&password_file=pw", "never sends a password without TLS"),
            ("\(tls.url)?ca=ca.pem", "530"),
        ]
        _ = try s.sh("msg compose --to ann@example.com --from me@example.com --body x --enqueue > /dev/null", env: env)
        for (transport, said) in cases {
            let r = try s.sh("msg flush --transport '\(transport)' > /dev/null; echo $?; msg queue count --status queued", env: env)
            #expect(r.lines == ["78", "1"], "\(transport): \(r.out) \(r.err)")
            #expect(r.err.contains(said), "\(transport): \(r.err)")
        }
        let ok = try s.sh("""
            msg flush --transport '\(tls.url)?ca=ca.pem&user=ann&password_file=pw' > /dev/null; echo $?
            msg compose --to bob@example.com --from me@example.com --body y --enqueue > /dev/null
            msg flush --transport '\(implicit.url)?ca=ca.pem' > /dev/null; echo $?
            msg compose --to cy@example.com --body z --enqueue > /dev/null
            msg flush --transport '\(plain.url)?tls=none&from=robot@example.com' > /dev/null; echo $?
            msg queue count --status sent; cat faults/log | python3 -c 'import json,sys; print(*[json.loads(l)["mail_from"] for l in sys.stdin])'
            """, env: env)
        #expect(ok.lines == ["0", "0", "0", "3", "me@example.com me@example.com robot@example.com"], "\(ok.out) \(ok.err)")
        #expect(!ok.err.contains("s3cret"), "no password is printed")
    }

    /// Killed with SIGKILL in the middle of 2,000 mails to Postfix, then recovered:
    /// every mail arrives, and a Message-ID arrives twice only among those recover
    /// put back in doubt (SMTP's window, RFC 1047), which it counts.
    @Test func killedMidFlushThenRecoveredEachMailOnceOrCounted() throws {
        let (s, env) = try sandbox()
        let postfix = try Postfix(s)
        var e = env
        e["MSG_TRANSPORT"] = "\(postfix.url)?ca=ca.pem&concurrency=4"
        let r = try s.sh("""
            seq 2000 | awk '{printf "{\\"to\\":\\"u%d@example.com\\",\\"from\\":\\"me@example.com\\",\\"body\\":\\"m%d\\"}\\n", $1, $1}' | msg compose --enqueue > /dev/null
            msg flush > /dev/null 2>&1 & pid=$!
            until [ "$(grep -c 'status=sent' postfix/maillog 2>/dev/null || echo 0)" -ge 500 ] || ! kill -0 $pid 2>/dev/null; do sleep 0.005; done
            kill -9 $pid; wait $pid; echo $?
            msg recover --stale-after 0s > /dev/null 2> recover.err; msg flush > /dev/null; echo $?
            msg queue count --status sent
            for i in $(seq 400); do [ "$(grep -c 'status=sent' postfix/maillog)" -ge 2000 ] && [ -z "$(ls postfix/queue/active postfix/queue/incoming 2>/dev/null | grep -v :)" ] && break; sleep 0.05; done
            sed -n 's/.*(\\([0-9]*\\) the transport cannot check.*/\\1/p' recover.err
            """, env: e)
        #expect(r.lines.prefix(3) == ["137", "0", "2000"], "\(r.out) \(r.err)")
        let recovered = Int(r.lines.last ?? "") ?? -1
        let mails = try readMaildir(s, s.home + "/postfix/mail/inbox")
        var seen: [String: Int] = [:]
        for m in mails { seen[m["id"] ?? "", default: 0] += 1 }
        #expect(seen.count == 2000, "every mail arrived: \(seen.count)")
        let twice = seen.values.filter { $0 > 1 }.count
        let said = (try? String(contentsOfFile: s.home + "/recover.err", encoding: .utf8)) ?? ""
        #expect(twice <= max(recovered, 0), "\(twice) arrived twice; recover counted \(recovered) in doubt: \(said)")
    }
}
