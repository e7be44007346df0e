import Foundation
import MsgKit
import Testing

/// `tls://` for the sender and `msg listen` through the real binaries, with
/// certificates made by openssl: mutual TLS, every misconfiguration a
/// configuration error that sends nothing, SIGHUP's reload, and recover's lookup.
@Suite(.timeLimit(.minutes(3))) struct TLSTests {
    /// The directory scripts/test builds the tls:// plugin into.
    func networkPlugins() throws -> String {
        guard let plugins = ProcessInfo.processInfo.environment["MSG_TEST_NETWORK_PLUGINS"] else {
            Issue.record("the tls:// tests need the plugin scripts/test builds (MSG_TEST_NETWORK_PLUGINS); run scripts/test")
            throw MsgError(.config, "no network plugins")
        }
        return plugins
    }

    /// Two CAs (`ca`, `other-ca`); signed by `ca`: `server` and `server2` (for
    /// 127.0.0.1 and localhost), `client`, and `expired` (2020); by `other-ca`:
    /// `stranger`, a client. Keys are `NAME-key.pem`, owner-only.
    func makeCertificates(_ s: Sandbox) throws {
        let r = try s.sh("""
            set -e
            key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; chmod 600 "$1"; }
            for ca in ca other-ca; do
              key $ca-key.pem
              openssl req -x509 -new -key $ca-key.pem -days 2 -subj "/CN=msg test $ca" -out $ca.pem
            done
            printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > server.ext
            sign() {
              key $1-key.pem
              openssl req -new -key $1-key.pem -subj "/CN=$3" -out $1.csr
              openssl x509 -req -in $1.csr -CA $2.pem -CAkey $2-key.pem -CAcreateserial -days 2 ${4:+-extfile $4} -out $1.pem 2>/dev/null
            }
            sign server ca 127.0.0.1 server.ext
            sign server2 ca 127.0.0.1 server.ext
            sign client ca msg-client
            sign stranger other-ca msg-stranger
            key expired-key.pem
            openssl req -new -key expired-key.pem -subj /CN=127.0.0.1 -out expired.csr
            : > index.txt; echo 01 > serial
            printf '[ca]\\ndefault_ca=d\\n[d]\\ndatabase=index.txt\\nnew_certs_dir=.\\nserial=serial\\ndefault_md=sha256\\npolicy=p\\ncopy_extensions=copy\\n[p]\\ncommonName=supplied\\n' > ca.cnf
            openssl ca -batch -notext -config ca.cnf -cert ca.pem -keyfile ca-key.pem -in expired.csr -out expired.pem \\
              -startdate 20200101000000Z -enddate 20200102000000Z -extfile server.ext 2>/dev/null
            """)
        #expect(r.status == 0, "openssl: \(r.err)")
    }

    /// A sandbox with the certificates, and the environment that finds the plugin.
    func sandbox() throws -> (Sandbox, [String: String]) {
        let plugins = try networkPlugins()
        let s = try Sandbox()
        try makeCertificates(s)
        return (s, ["MSG_PLUGIN_PATH": plugins])
    }

    /// A listener that wants client certificates `ca.pem` signed, into `inbox`.
    func mutualListener(_ s: Sandbox, _ env: [String: String]) throws -> ListenerProcess {
        try ListenerProcess(s, address: "tls://127.0.0.1:0?cert=server.pem&key=server-key.pem&client_ca=ca.pem",
                            ["--into", "file:\(s.home)/inbox"], environment: env)
    }

    @Test func mutualTLSDeliversAndEveryMisconfigurationIsAConfigurationError() throws {
        let (s, env) = try sandbox()
        let listener = try mutualListener(s, env)
        let plain = try ListenerProcess(s, address: "tcp://127.0.0.1:0", ["--into", "file:\(s.home)/plain"], environment: env)
        let expired = try ListenerProcess(s, address: "tls://127.0.0.1:0?cert=expired.pem&key=expired-key.pem",
                                          ["--into", "file:\(s.home)/expired"], environment: env)
        let tls = listener.url
        let good = "\(tls)?ca=ca.pem&cert=client.pem&key=client-key.pem"
        let sent = try s.sh("""
            seq 3 | awk '{printf "{\\"to\\":\\"u%d\\",\\"body\\":\\"b\\"}\\n", $1}' | msg compose --enqueue > /dev/null
            msg flush --transport '\(good)' > /dev/null; echo $?; ls inbox/new | wc -l
            """, env: env)
        #expect(sent.lines == ["0", "3"], "\(sent.err)")

        // Each is refused before anything is sent: exit 78, one line saying which,
        // the message still queued.
        let port = { (l: ListenerProcess) in l.url.split(separator: ":").last.map(String.init) ?? "" }
        let cases: [(String, String)] = [
            ("\(tls)?ca=other-ca.pem&cert=client.pem&key=client-key.pem", "its certificate is not signed by a CA msg trusts"),
            ("\(tls)?cert=client.pem&key=client-key.pem", "its certificate is not signed by a CA msg trusts"),
            ("\(good)&server_name=other.example", "its certificate is not for other.example"),
            ("\(tls)?ca=ca.pem", "the receiver wants a client certificate"),
            ("\(tls)?ca=ca.pem&cert=stranger.pem&key=stranger-key.pem", "the receiver refused this sender's certificate"),
            // Naming the port it listens on, not the 0 it was given.
            ("tcp://127.0.0.1:\(port(listener))", "this receiver speaks TLS; send with tls:// (a tcp:// sender connected to tls://127.0.0.1:\(port(listener)))"),
            ("tls://127.0.0.1:\(port(plain))?ca=ca.pem", "the receiver does not speak TLS there"),
            ("\(expired.url)?ca=ca.pem", "its certificate expired on 2020-01-02 00:00:00 UTC"),
        ]
        _ = try s.sh("msg compose --to late --body x --enqueue > /dev/null")
        for (transport, said) in cases {
            let r = try s.sh("msg flush --transport '\(transport)' > /dev/null; echo $?; msg queue count --status queued", env: env)
            #expect(r.lines == ["78", "1"], "\(transport): \(r.out) \(r.err)")
            #expect(r.err.contains(said), "\(transport): \(r.err)")
            #expect(r.err.split(separator: "\n").count == 1, "one line: \(r.err)")
        }
        // The right name given for an address works.
        let named = try s.sh("msg flush --transport '\(good)&server_name=localhost' > /dev/null; echo $?; ls inbox/new | wc -l", env: env)
        #expect(named.lines == ["0", "4"], "\(named.err)")
        #expect(try s.sh("ls plain/new expired/new 2>/dev/null | grep -c json || true").out == "0\n", "nothing reached the wrong listeners")

        let said = listener.stop().stderr
        for reason in ["PEER_DID_NOT_RETURN_A_CERTIFICATE", "CERTIFICATE_VERIFY_FAILED", "this receiver speaks TLS"] {
            #expect(said.contains("refused a connection from 127.0.0.1: ") && said.contains(reason), "the listener says why: \(said)")
        }
        #expect(plain.stop().stderr.contains("a TLS client (tls://) connected to a listener that speaks msg's protocol in clear text"))
        _ = expired.stop()
    }

    @Test func keysOthersCanReadAndMissingCertificatesAreRefused() throws {
        let (s, env) = try sandbox()
        let r = try s.sh("""
            chmod 644 client-key.pem server-key.pem
            msg compose --to a --body x --enqueue > /dev/null
            msg flush --transport 'tls://127.0.0.1:9?ca=ca.pem&cert=client.pem&key=client-key.pem' > /dev/null; echo $?
            msg listen 'tls://127.0.0.1:0?cert=server.pem&key=server-key.pem' < /dev/null; echo $?
            msg listen 'tls://127.0.0.1:0?cert=server.pem' < /dev/null; echo $?
            msg listen 'tls://0.0.0.0:0?cert=server.pem&key=expired-key.pem' < /dev/null; echo $?
            msg queue count --status queued
            """, env: env)
        #expect(r.lines == ["78", "78", "78", "78", "1"], "\(r.out) \(r.err)")
        #expect(r.err.contains("key client-key.pem can be read by others; chmod 0600 it"), "\(r.err)")
        #expect(r.err.contains("key server-key.pem can be read by others"), "\(r.err)")
        #expect(r.err.contains("needs its certificate and key: cert=FILE&key=FILE"), "\(r.err)")
        #expect(r.err.contains("the TLS settings do not load"), "a key that is not the certificate's: \(r.err)")
        #expect(!r.err.contains("BEGIN"), "no key is ever printed")

        // Client certificates authenticate senders: a listener others can reach
        // needs no token with client_ca=, and refuses to start with neither.
        let open = try s.sh("msg listen 'tls://0.0.0.0:0?cert=server.pem&key=expired-key.pem&client_ca=ca.pem' < /dev/null; echo $?", env: env)
        #expect(open.lines == ["78"], "the key does not match, not a missing token: \(open.err)")
        #expect(open.err.contains("do not load"), "\(open.err)")
        let mutual = try ListenerProcess(s, address: "tls://0.0.0.0:0?cert=expired.pem&key=expired-key.pem&client_ca=ca.pem", environment: env)
        #expect(!mutual.saidAtStart.contains("token"), "\(mutual.saidAtStart)")
        _ = mutual.stop()
        let bare = try s.sh("msg listen 'tls://0.0.0.0:0?cert=expired.pem&key=expired-key.pem' < /dev/null; echo $?", env: env)
        #expect(bare.lines == ["78"] && bare.err.contains("needs no token"), "\(bare.err)")
    }

    /// certbot-style rotation: the files replaced, SIGHUP, and new connections get
    /// the new certificate while a watching sender's connection stays as it was.
    @Test func sighupReadsTheCertificateAgainWithoutDroppingConnections() throws {
        let (s, env) = try sandbox()
        let r = try s.sh("""
            mkdir live; cp server.pem live/cert.pem; cp server-key.pem live/key.pem
            serial() { echo | openssl s_client -connect "127.0.0.1:$1" -CAfile ca.pem 2>/dev/null | openssl x509 -noout -serial; }
            msg listen 'tls://127.0.0.1:0?cert=live/cert.pem&key=live/key.pem' --metrics 127.0.0.1:0 --into file:$PWD/inbox 2> err & pid=$!
            for i in $(seq 200); do grep -q 'metrics at' err && break; sleep 0.05; done
            url=$(sed -n 's/^msg: metrics at \\(http:[^ ]*\\).*/\\1/p' err)
            port=$(sed -n 's/^msg: listening on tls:[^,]*:\\([0-9]*\\),.*/\\1/p' err)
            msg flush --watch --transport "tls://127.0.0.1:$port?ca=ca.pem" > /dev/null 2> watch.err & watch=$!
            msg compose --to a --body one --enqueue > /dev/null
            for i in $(seq 200); do [ "$(msg queue count --status sent)" = 1 ] && break; sleep 0.05; done
            before=$(serial $port)
            [ "$before" = "$(openssl x509 -in server.pem -noout -serial)" ] && echo "served server.pem"
            cp server2.pem live/cert.pem; cp server2-key.pem live/key.pem
            kill -HUP $pid
            for i in $(seq 200); do grep -q 'SIGHUP' err && break; sleep 0.05; done
            [ "$(serial $port)" = "$(openssl x509 -in server2.pem -noout -serial)" ] && echo "serves server2.pem"
            msg compose --to a --body two --enqueue > /dev/null
            for i in $(seq 200); do [ "$(msg queue count --status sent)" = 2 ] && break; sleep 0.05; done
            msg queue count --status sent
            # A file that does not read keeps what was read before.
            echo broken > live/key.pem; kill -HUP $pid
            for i in $(seq 200); do [ "$(grep -c SIGHUP err)" = 2 ] && break; sleep 0.05; done
            [ "$(serial $port)" = "$(openssl x509 -in server2.pem -noout -serial)" ] && echo "still serves server2.pem"
            curl -s "$url" | grep '^msg_listener_connections_accepted_total'
            kill -TERM $watch; wait $watch; kill -TERM $pid; wait $pid; echo "exit $?"
            grep SIGHUP err | sed 's/^msg: //'
            """, env: env)
        #expect(r.lines == [
            "served server.pem", "serves server2.pem", "2", "still serves server2.pem",
            // The watch's one connection, and the three of openssl's s_client.
            "msg_listener_connections_accepted_total 4", "exit 0",
            "SIGHUP: read the certificate and key (live/cert.pem, live/key.pem) again; new connections use it, open ones are kept",
            "SIGHUP: tls: key=live/key.pem holds no PEM private key that reads; still using what was read before",
        ], "\(r.out) \(r.err)")
    }

    /// A sender killed after the receiver took a batch: recover asks the receiver
    /// over TLS, and nothing is delivered twice.
    @Test func recoverLooksUpOverTLS() throws {
        let (s, env) = try sandbox()
        let listener = try mutualListener(s, env)
        let t = "--transport '\(listener.url)?ca=ca.pem&cert=client.pem&key=client-key.pem'"
        let r = try s.sh("""
            seq 200 | awk '{printf "{\\"to\\":\\"u%d\\",\\"body\\":\\"b\\"}\\n", $1}' | msg compose --enqueue > /dev/null
            MSG_FAULT=after-delivery:100 msg flush --batch 64 \(t) > /dev/null 2>&1; echo $?
            msg recover --stale-after 0s \(t) > /dev/null; msg flush \(t) > /dev/null; echo $?
            msg queue count --status sent; ls inbox/new | wc -l
            """, env: env)
        #expect(r.lines == ["137", "0", "200", "200"], "\(r.out) \(r.err)")
        #expect(r.err.contains("64 already delivered (sent)"), "recover asked the receiver: \(r.err)")
        _ = listener.stop()
    }
}
