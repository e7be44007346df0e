import Foundation
import MsgKit
import MsgKitTesting
import Testing

/// The network edge against hostile peers (issue #49): a certificate is for a
/// name only by a DNS name in its subjectAltName, never by its subject's text;
/// STARTTLS forgets everything said in clear; a reply no command asked for is
/// never taken as an answer; a handshake that never finishes holds no connection.
@Suite(.timeLimit(.minutes(3))) struct NetworkEdgeTests {
    /// TLSTests' certificates, and, signed by the same trusted CA: `evil` (subject
    /// `CN=evil.example;common_name=localhost`, SAN `IP:127.0.0.1` only),
    /// `sanless` (`CN=localhost`, no SAN), `slash` (subject
    /// `CN=evil.example/CN=localhost`, SAN `IP:127.0.0.1`), `wild` (SAN
    /// `DNS:*.example.test`) and `broad` (SAN `DNS:*.test`).
    func sandbox() throws -> (Sandbox, [String: String]) {
        let (s, env) = try TLSTests().sandbox()
        let r = try s.sh("""
            set -e
            for name in evil sanless slash wild broad; do
              openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out $name-key.pem 2>/dev/null; chmod 600 $name-key.pem
            done
            openssl req -new -key evil-key.pem -subj '/CN=evil.example;common_name=localhost' -out evil.csr
            printf 'subjectAltName=IP:127.0.0.1\\n' > evil.ext
            openssl x509 -req -in evil.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -extfile evil.ext -out evil.pem 2>/dev/null
            openssl req -new -key sanless-key.pem -subj '/CN=localhost' -out sanless.csr
            openssl x509 -req -in sanless.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -out sanless.pem 2>/dev/null
            openssl req -new -key slash-key.pem -subj '/CN=evil.example\\/CN=localhost' -out slash.csr
            openssl x509 -req -in slash.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -extfile evil.ext -out slash.pem 2>/dev/null
            for name in wild broad; do
              openssl req -new -key $name-key.pem -subj "/CN=$name" -out $name.csr
              printf 'subjectAltName=DNS:%s\n' "$([ $name = wild ] && echo '*.example.test' || echo '*.test')" > $name.ext
              openssl x509 -req -in $name.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -extfile $name.ext -out $name.pem 2>/dev/null
            done
            openssl x509 -in evil.pem -noout -subject
            openssl x509 -in slash.pem -noout -subject
            """)
        #expect(r.status == 0 && r.out.contains("common_name=localhost") && r.out.contains("evil.example/CN=localhost"), "openssl: \(r.out) \(r.err)")
        return (s, env)
    }

    /// One message flushed through `url`: the lines are flush's exit status, then
    /// `after`'s output; the queue is emptied for the next.
    func sendOne(_ s: Sandbox, _ url: String, _ env: [String: String], after: String = "") throws -> Run {
        try s.sh("""
            msg compose --to a --body x --enqueue > /dev/null
            msg flush --transport '\(url)' > /dev/null; echo $?
            msg queue ls --format csv | tail -n +2 | cut -d, -f1 | msg queue rm > /dev/null
            \(after)
            """, env: env)
    }

    /// The check: tls://localhost and server_name=localhost refuse the evil
    /// certificate (78, nothing delivered), and a certificate without a DNS name is
    /// for no name; the same certificate serves the address it names when that
    /// address is what the user named.
    @Test func aCertificateIsForANameOnlyByItsDNSNames() throws {
        let (s, env) = try sandbox()
        for cert in ["evil", "sanless", "slash"] {
            let listener = try ListenerProcess(s, address: "tls://127.0.0.1:0?cert=\(cert).pem&key=\(cert)-key.pem&client_ca=ca.pem",
                                               ["--into", "file:\(s.home)/inbox-\(cert)"], environment: env)
            let port = listener.port
            for url in ["tls://localhost:\(port)?ca=ca.pem&cert=client.pem&key=client-key.pem",
                        "tls://127.0.0.1:\(port)?ca=ca.pem&cert=client.pem&key=client-key.pem&server_name=localhost"] {
                let r = try sendOne(s, url, env, after: "ls inbox-\(cert)/new 2>/dev/null | wc -l")
                #expect(r.lines == ["78", "0"], "\(cert) \(url): \(r.out) \(r.err)")
                #expect(r.err.contains("its certificate is not for localhost"), "\(cert): \(r.err)")
            }
            if cert != "sanless" {
                let named = try s.sh("""
                    msg compose --to a --body x --enqueue > /dev/null
                    msg flush --transport 'tls://127.0.0.1:\(port)?ca=ca.pem&cert=client.pem&key=client-key.pem' > /dev/null; echo $?
                    """, env: env)
                #expect(named.lines == ["0"], "the address the user named: \(named.err)")
            }
            _ = listener.stop()
        }
    }

    /// A wildcard stands for one whole left-most label under at least two more
    /// (RFC 6125 6.4.3): `*.example.test` is for mail.example.test, not for
    /// example.test nor a.b.example.test; `*.test` is for no host.
    @Test func aWildcardIsForOneLabel() throws {
        let (s, env) = try sandbox()
        for (cert, name, expected) in [("wild", "mail.example.test", "0"), ("wild", "example.test", "78"),
                                       ("wild", "a.b.example.test", "78"), ("broad", "mail.test", "78")] {
            let listener = try ListenerProcess(s, address: "tls://127.0.0.1:0?cert=\(cert).pem&key=\(cert)-key.pem&client_ca=ca.pem",
                                               ["--into", "file:\(s.home)/inbox-\(cert)"], environment: env)
            let r = try sendOne(s, "tls://127.0.0.1:\(listener.port)?ca=ca.pem&cert=client.pem&key=client-key.pem&server_name=\(name)", env)
            #expect(r.lines == [expected], "\(cert) for \(name): \(r.out) \(r.err)")
            _ = listener.stop()
        }
    }

    /// A tls:// listener with client certificates and no token closes connections
    /// that never start their handshake within seconds, so they cannot fill its
    /// cap; a good sender then still delivers.
    @Test func stalledHandshakesAreClosedWithinSeconds() throws {
        let (s, env) = try sandbox()
        let listener = try ListenerProcess(s, address: "tls://127.0.0.1:0?cert=server.pem&key=server-key.pem&client_ca=ca.pem",
                                           ["--into", "file:\(s.home)/inbox"], environment: env)
        let stalled = try (0..<20).map { _ in try LineClient(port: listener.port) }
        let started = Date()
        for client in stalled { #expect(client.closedByPeer(within: 15), "a stalled handshake is closed") }
        #expect(Date().timeIntervalSince(started) < 15)
        let r = try s.sh("""
            msg compose --to a --body x --enqueue > /dev/null
            msg flush --transport 'tls://127.0.0.1:\(listener.port)?ca=ca.pem&server_name=localhost&cert=client.pem&key=client-key.pem' > /dev/null; echo $?
            ls inbox/new | wc -l
            """, env: env)
        #expect(r.lines == ["0", "1"], "\(r.out) \(r.err)")
        let said = listener.stop().stderr
        #expect(said.contains("closed a connection from 127.0.0.1: no line (over TLS: no finished handshake) within 5s"), "\(said)")
    }

    /// smtp:// after STARTTLS refuses the evil certificate for localhost: 78, no mail.
    @Test func starttlsRefusesTheEvilCertificate() throws {
        let (s, env) = try sandbox()
        let server = try SMTPTests.FaultServer(s, ["--tls", "evil.pem", "evil-key.pem"])
        let port = server.url.split(separator: ":").last.map(String.init) ?? ""
        let r = try s.sh("""
            msg compose --to ann@example.com --from me@example.com --body x --enqueue > /dev/null
            msg flush --transport 'smtp://localhost:\(port)?ca=ca.pem' > /dev/null; echo $?
            msg queue count --status queued; ls faults/new 2>/dev/null | wc -l
            """, env: env)
        #expect(r.lines == ["78", "1", "0"], "\(r.out) \(r.err)")
        #expect(r.err.contains("not for localhost"), "\(r.err)")
    }

    /// A Python SMTP server that lies: `MODE` is `starttls` (its 220 to STARTTLS
    /// comes with five more replies in the same write, then TLS, then it refuses
    /// RCPT), `data` (its 354 comes with a 250 in the same write, then 554 to the
    /// final dot) or `slow` (0.4 s before each reply). It logs what it was sent.
    func liar(_ s: Sandbox, mode: String) throws -> (TestProcess, Int) {
        _ = try s.file("liar.py", """
            import socket, ssl, sys, time
            mode = sys.argv[1]
            l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); l.bind(("127.0.0.1", 0)); l.listen(8)
            print(l.getsockname()[1], flush=True)
            log = open("liar.log", "ab")
            while True:
                c, _ = l.accept()
                c.settimeout(10)
                f = c.makefile("rwb")
                def say(b):
                    if mode == "slow":
                        time.sleep(0.4)
                    f.write(b); f.flush()
                say(b"220 liar ESMTP\\r\\n")
                try:
                    while True:
                        line = f.readline()
                        if not line:
                            break
                        log.write(line); log.flush()
                        cmd = line.upper()
                        if cmd.startswith(b"EHLO"):
                            say(b"250-liar\\r\\n" + (b"250-STARTTLS\\r\\n" if mode == "starttls" else b"") + b"250 8BITMIME\\r\\n")
                        elif cmd.startswith(b"STARTTLS"):
                            say(b"220 go ahead\\r\\n250 ok\\r\\n250 ok\\r\\n250 ok\\r\\n354 go\\r\\n250 taken\\r\\n")
                            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain("server.pem", "server-key.pem")
                            c = ctx.wrap_socket(c, server_side=True); f = c.makefile("rwb")
                        elif cmd.startswith(b"RCPT"):
                            say(b"550 no\\r\\n" if mode == "starttls" else b"250 ok\\r\\n")
                        elif cmd.startswith(b"DATA"):
                            say(b"354 go\\r\\n250 taken\\r\\n")
                            while f.readline() not in (b".\\r\\n", b""):
                                pass
                            say(b"554 refused after all\\r\\n")
                        elif cmd.startswith(b"QUIT"):
                            say(b"221 bye\\r\\n"); break
                        else:
                            say(b"250 ok\\r\\n")
                except Exception as e:
                    log.write(b"# " + repr(e).encode() + b"\\n"); log.flush()
                c.close()
            """)
        let p = TestProcess(["/usr/bin/env", "python3", s.home + "/liar.py", mode])
        p.currentDirectoryURL = URL(fileURLWithPath: s.home)
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        var line = Data()
        while let b = try out.fileHandleForReading.read(upToCount: 1), !b.isEmpty, b != Data([10]) { line += b }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else { throw MsgError(.unavailable, "liar.py did not start") }
        return (p, port)
    }

    /// `--deadline` bounds a whole attempt, not each step: a server that takes
    /// 0.4 s over each of its replies (greeting, EHLO, MAIL, RCPT, DATA, the dot)
    /// gets no attempt longer than about the deadline of 1 s, which times out.
    @Test func theDeadlineBoundsAWholeAttempt() throws {
        let (s, env) = try sandbox()
        let (server, port) = try liar(s, mode: "slow")
        defer { server.signal(SIGKILL); try? server.wait() }
        let r = try s.sh("""
            msg compose --to ann@example.com --from me@example.com --body x --enqueue > /dev/null
            msg flush --deadline 1s --transport 'smtp://127.0.0.1:\(port)?tls=none' > /dev/null; echo $?
            msg queue ls --format csv | tail -n +2 | cut -d, -f2
            msg queue ls --history
            """, env: env)
        #expect(r.lines.prefix(2) == ["75", "failed"], "\(r.out) \(r.err)")
        #expect(r.err.contains("timeout"), "\(r.err)")
        // The attempt as msg recorded it: from its claim to its failure, about the
        // deadline; each step bounded alone, the six replies would take 2.4 s.
        let m = try #require(try records(r.lines.last ?? "").first)
        let claimed = try #require(m.history.first { $0.event == "attempt" }?.at)
        let failed = try #require(m.history.last { $0.event == "failed" }?.at)
        #expect(failed.milliseconds - claimed.milliseconds < 2_000, "one attempt, bounded whole: \(failed.milliseconds - claimed.milliseconds) ms")
    }

    /// One mail flushed to the lying server in `mode`: the lines are flush's exit
    /// status, then the message's status.
    func mailToLiar(mode: String, parameters: String) throws -> (Sandbox, Run) {
        let (s, env) = try sandbox()
        let (server, port) = try liar(s, mode: mode)
        defer { server.signal(SIGKILL); try? server.wait() }
        let r = try s.sh("""
            msg compose --to ann@example.com --from me@example.com --body x --enqueue > /dev/null
            msg flush --transport 'smtp://127.0.0.1:\(port)?\(parameters)' > /dev/null; echo $?
            msg queue ls --format csv | tail -n +2 | cut -d, -f2
            """, env: env)
        return (s, r)
    }

    /// The check: replies injected behind the STARTTLS 220 get nothing sent
    /// (no MAIL ever reaches the server) and the message stays, to be retried.
    @Test func repliesInjectedBehindStarttlsSendNothing() throws {
        let (s, r) = try mailToLiar(mode: "starttls", parameters: "ca=ca.pem")
        #expect(r.lines == ["75", "failed"], "\(r.out) \(r.err)")
        #expect(r.err.contains("behind its STARTTLS 220"), "\(r.err)")
        let log = try String(contentsOfFile: s.home + "/liar.log", encoding: .utf8)
        #expect(!log.contains("MAIL FROM") && !log.contains("Subject"), "nothing was sent: \(log)")
    }

    /// A 250 sent with the 354, before the data's final dot, is no answer to it:
    /// the message is not recorded sent (the server then refused it with 554).
    @Test func aReplyAheadOfTheFinalDotIsNotBelieved() throws {
        let (_, r) = try mailToLiar(mode: "data", parameters: "tls=none")
        #expect(r.lines.count == 2 && r.lines.last != "sent", "\(r.out) \(r.err)")
        #expect(r.err.contains("a reply no command asked for"), "\(r.err)")
    }

    /// Every store and transport refuses a parameter it does not know, naming it,
    /// before anything is stored, created or sent.
    @Test func everyPluginRefusesAParameterItDoesNotKnow() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            echo '{"to":"a","body":"b"}' | msg compose | msg queue add --store "sqlite:$PWD/q.sqlite?journl=wal" > /dev/null; echo $?
            ls q.sqlite 2>/dev/null | wc -l
            msg compose --to a --body b --enqueue > /dev/null
            msg flush --transport "file:$PWD/drop?fsync=no" > /dev/null; echo $?
            ls -d drop 2>/dev/null | wc -l; msg queue count --status queued
            msg queue count --store "json:$PWD/q.json?max_recrds=5"; echo $?
            """)
        #expect(r.lines == ["78", "0", "78", "0", "1", "78"], "\(r.out) \(r.err)")
        #expect(r.err.contains("unknown parameter 'journl'; the sqlite: store takes none"), "\(r.err)")
        #expect(r.err.contains("file: unknown parameter 'fsync'; it takes parents"), "\(r.err)")
    }
}
