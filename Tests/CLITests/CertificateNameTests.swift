import Foundation
import MsgKit
import MsgKitTesting
import Testing

/// https:// and postgres:// take a certificate for a host name only by its DNS
/// names, as tls:// and smtp:// do (issue #68): swift-nio-ssl alone also took a
/// certificate whose only name is the address connected to. NetworkEdgeTests'
/// certificates: `evil` names only IP:127.0.0.1, `server` 127.0.0.1 and
/// localhost, `expired` ended in 2020; `other-ca` signed none of the servers'.
@Suite(.timeLimit(.minutes(3))) struct CertificateNameTests {
    /// The check for https://: the evil certificate reached as localhost
    /// exits 78, naming the host and the certificate's names, and the server sees
    /// no request; reached as 127.0.0.1 it delivers. A good certificate, a wrong
    /// CA and an expired certificate are the controls.
    @Test func httpsTakesAHostNameOnlyFromTheCertificatesDNSNames() throws {
        let (s, env) = try NetworkEdgeTests().sandbox()
        let cases: [(cert: String, host: String, ca: String, exit: String, said: String)] = [
            ("evil", "localhost", "ca", "78", "its certificate is not for localhost (it names IP:127.0.0.1); nothing was sent"),
            ("evil", "127.0.0.1", "ca", "0", ""),
            ("server", "localhost", "ca", "0", ""),
            ("server", "localhost", "other-ca", "78", "CERTIFICATE_VERIFY_FAILED"),
            ("expired", "localhost", "ca", "78", "CERTIFICATE_VERIFY_FAILED"),
        ]
        for (i, c) in cases.enumerated() {
            let server = try HostileDestinationTests.Receiver(s, name: "server\(i)", arguments: ["--tls", "\(s.home)/\(c.cert).pem", "\(s.home)/\(c.cert)-key.pem"])
            let url = "https://\(c.host):\(server.port)/hook?ca_file=\(c.ca).pem"
            let r = try NetworkEdgeTests().sendOne(s, url, env)
            #expect(r.lines == [c.exit], "\(c): \(r.out) \(r.err)")
            #expect(c.said.isEmpty || r.err.contains(c.said), "\(c): \(r.err)")
            #expect(try server.requests().count == (c.exit == "0" ? 1 : 0), "\(c): requests the server saw")
        }
    }

    /// The check for postgres://: with sslmode=verify-full, the test
    /// server's certificate (only IP:127.0.0.1, CN=evil.example) reached as
    /// localhost refuses to open (78, naming both); as 127.0.0.1 it opens;
    /// verify-ca checks the chain alone; a CA that did not sign it is refused,
    /// named by `sslrootcert=` over `PGSSLROOTCERT`.
    @Test func postgresVerifyFullTakesAHostNameOnlyFromTheCertificatesDNSNames() throws {
        let server = try PostgresTests.Server()
        let s = try Sandbox()
        try TLSTests().makeCertificates(s)
        let schema = "cn_\(UUID().uuidString.prefix(8).lowercased())"
        func count(_ host: String, _ mode: String, ca: String = server.ca, parameters: String = "") throws -> Run {
            let url = server.url.replacingOccurrences(of: "@127.0.0.1:", with: "@\(host):") + "?schema=\(schema)&sslmode=\(mode)" + parameters
            return try s.sh("msg compose --to a --body x --enqueue > /dev/null; msg queue count; echo $?",
                            env: ["MSG_STORE": url, "MSG_PLUGIN_PATH": server.plugins, "PGPASSWORD": server.password, "PGSSLROOTCERT": ca])
        }
        let refused = try count("localhost", "verify-full")
        #expect(refused.lines == ["78"], "\(refused.out) \(refused.err)")
        #expect(refused.err.contains("its certificate is not for localhost (it names IP:127.0.0.1); nothing was sent"), "\(refused.err)")
        #expect(try count("127.0.0.1", "verify-full").lines == ["1", "0"])
        #expect(try count("localhost", "verify-ca").lines == ["2", "0"])
        // sslrootcert= over PGSSLROOTCERT (which names the right CA), as libpq.
        let stranger = try count("127.0.0.1", "verify-full", parameters: "&sslrootcert=\(s.home)/other-ca.pem")
        #expect(stranger.lines == ["78"] && stranger.err.contains("CERTIFICATE_VERIFY_FAILED"), "\(stranger.out) \(stranger.err)")
    }

    /// Against a server that logs what it is sent: the evil certificate reached as
    /// localhost gets the SSLRequest and nothing after the handshake (no startup
    /// message, so no user name and no password); bytes sent behind the server's
    /// `S`, before TLS (CVE-2021-23222), are refused before the handshake; reached
    /// as 127.0.0.1, the startup message does arrive (the log sees it when sent).
    @Test func aServerForAnotherNameIsSentNoStartupMessage() throws {
        let (s, env) = try NetworkEdgeTests().sandbox()
        _ = try s.file("pg.py", """
            import socket, ssl, sys
            mode = sys.argv[1]
            l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); l.bind(("127.0.0.1", 0)); l.listen(8)
            print(l.getsockname()[1], flush=True)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain("evil.pem", "evil-key.pem")
            log = open("pg-" + mode + ".log", "a")
            while True:
                c, _ = l.accept()
                c.settimeout(10)
                try:
                    request = b""
                    while len(request) < 8:
                        request += c.recv(8 - len(request))
                    log.write("request " + request.hex() + "\\n"); log.flush()
                    c.sendall(b"S" + (b"R\\0\\0\\0\\x08\\0\\0\\0\\0" if mode == "inject" else b""))
                    t = ctx.wrap_socket(c, server_side=True)
                    log.write("handshake\\n"); log.flush()
                    data = t.recv(4096)
                    if data:
                        log.write("startup " + data.hex() + "\\n"); log.flush()
                except Exception as e:
                    log.write("# " + repr(e) + "\\n"); log.flush()
                c.close()
            """)
        for (mode, host, exit, said) in [("tls", "localhost", "78", "its certificate is not for localhost (it names IP:127.0.0.1)"),
                                         ("inject", "127.0.0.1", "78", "bytes behind its yes to TLS"),
                                         ("tls", "127.0.0.1", "", "")] {
            let p = TestProcess(["/usr/bin/env", "python3", s.home + "/pg.py", mode])
            p.currentDirectoryURL = URL(fileURLWithPath: s.home)
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            defer { p.signal(SIGKILL); try? p.wait() }
            var line = Data()
            while let b = try out.fileHandleForReading.read(upToCount: 1), !b.isEmpty, b != Data([10]) { line += b }
            let port = String(decoding: line, as: UTF8.self)
            let url = "postgres://msg@\(host):\(port)/db?sslmode=verify-full&connect_timeout=3s"
            let r = try s.sh("msg queue count; echo $?", env: env.merging(["MSG_STORE": url, "PGSSLROOTCERT": s.home + "/ca.pem", "PGPASSWORD": "secret"]) { $1 })
            let log = (try? String(contentsOfFile: s.home + "/pg-\(mode).log", encoding: .utf8)) ?? ""
            #expect(log.hasPrefix("request 0000000804d2162f\n"), "\(mode) \(host): the SSLRequest: \(log)")
            if exit.isEmpty {
                #expect(log.contains("startup ") && log.contains(Data("msg".utf8).map { String(format: "%02x", $0) }.joined()), "\(host): \(log)")
            } else {
                #expect(r.lines == [exit] && r.err.contains(said), "\(mode) \(host): \(r.out) \(r.err)")
                #expect(!log.contains("startup "), "\(mode) \(host): nothing after the handshake: \(log)")
            }
        }
    }
}
