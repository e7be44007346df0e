import Foundation
import MsgKit
import MsgKitTesting
import Testing

/// `nats://` through the real binary, against Debian's nats-server with JetStream
/// on loopback (file storage), read back with nats-py (scripts/nats).
@Suite(.timeLimit(.minutes(5))) struct NATSTests {
    static let script = SMTPTests.repository + "/scripts/nats"

    /// A nats-server -js of its own, stopped when released; restartable on its port
    /// with its store.
    final class Server {
        let dir: String
        let port: Int
        let options: String
        var url: String { "nats://127.0.0.1:\(port)" }
        private let sandbox: Sandbox

        init(_ s: Sandbox, options: String = "") throws {
            sandbox = s
            dir = s.home + "/nats-\(UUID().uuidString.prefix(8))"
            self.options = options
            let r = try s.sh("'\(NATSTests.script)' start '\(dir)' \(options)")
            guard r.status == 0, let port = r.lines.last.flatMap({ Int($0) }) else {
                throw MsgError(.unavailable, "nats-server did not start: \(r.err)")
            }
            self.port = port
        }

        func start() throws {
            let r = try sandbox.sh("'\(NATSTests.script)' start '\(dir)' --port \(port) \(options)")
            guard r.status == 0 else { throw MsgError(.unavailable, "nats-server did not start again: \(r.err)") }
        }

        func kill() throws { _ = try sandbox.sh("'\(NATSTests.script)' kill '\(dir)'") }

        /// Adds stream `name` on `subjects` (and `options`, e.g. --max-msgs 5 --discard new).
        func addStream(_ name: String, _ subjects: String, _ options: String = "", client: String = "") throws {
            let r = try sandbox.sh("'\(NATSTests.script)' stream add \(url) \(client) \(name) \(subjects) \(options)")
            #expect(r.status == 0, "stream add: \(r.err)")
        }

        /// Each message of stream `name`: its subject, headers and data.
        func messages(_ name: String, client: String = "") throws -> [(subject: String, headers: [String: String], data: String)] {
            let r = try sandbox.sh("'\(NATSTests.script)' stream dump \(url) \(client) \(name)", timeout: 120)
            #expect(r.status == 0, "stream dump: \(r.err)")
            return try r.lines.map { line in
                let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
                return (o["subject"] as? String ?? "", o["headers"] as? [String: String] ?? [:], o["data"] as? String ?? "")
            }
        }

        deinit { _ = try? sandbox.sh("'\(NATSTests.script)' stop '\(dir)'") }
    }

    /// `n` messages to `recipients` recipients in turn, queued; their ids.
    func queue(_ s: Sandbox, _ n: Int, recipients: Int = 1) throws -> [String] {
        let r = try s.sh("""
            for i in $(seq 1 \(n)); do printf '{"to":"c%d","body":"order %d","headers":{"X-Order":"%d"}}\\n' $((i % \(recipients))) $i $i; done \
              | msg compose | msg queue add
            """)
        #expect(r.status == 0, "queue add: \(r.err)")
        return ids(r.out)
    }

    @Test func tenThousandMessagesLeaveTenThousandInTheStreamAndASecondFlushAddsNone() throws {
        let s = try Sandbox()
        let server = try Server(s)
        try server.addStream("ORDERS", "'orders.>'")
        let queued = try queue(s, 10_000, recipients: 100)
        _ = try s.sh("cp queue.sqlite before.sqlite")
        let url = "\(server.url)/orders.new?concurrency=64"
        let first = try s.sh("msg flush --transport '\(url)' > /dev/null")
        #expect(first.status == 0, "\(first.err)")
        let stored = try server.messages("ORDERS")
        #expect(stored.count == 10_000)
        #expect(Set(stored.compactMap { $0.headers["Nats-Msg-Id"] }) == Set(queued))
        #expect(stored.allSatisfy { $0.subject == "orders.new" })
        // The record as a destination receives it, and msg's headers as NATS headers.
        let one = try #require(stored.first)
        let record = try Message(jsonText: one.data)
        #expect(record.status == .delivered && record.id == one.headers["Nats-Msg-Id"])
        #expect(one.headers["X-Order"] == record.body.replacingOccurrences(of: "order ", with: ""))
        // Each sent event keeps the stream's PubAck: the stream and a sequence of its own.
        let sent = try records(s.sh("msg queue ls --history --status sent").out)
        #expect(sent.count == 10_000)
        let receipts = sent.compactMap { m in m.history.last?.extra.first { $0.key == "receipt" }?.value }
        #expect(receipts.count == 10_000 && receipts.allSatisfy { $0["stream"]?.stringValue == "ORDERS" && $0["duplicate"] == nil })
        #expect(Set(receipts.compactMap { $0["seq"]?.intValue }) == Set(1...10_000))

        // The same records again (a crash between the PubAck and msg's record of
        // it): the stream takes them as duplicates, acknowledged, not stored twice.
        _ = try s.sh("cp before.sqlite queue.sqlite && rm -f queue.sqlite-wal queue.sqlite-shm")
        let again = try s.sh("msg flush --transport '\(url)' > /dev/null")
        #expect(again.status == 0, "\(again.err)")
        let resent = try records(s.sh("msg queue ls --history --status sent").out)
        #expect(resent.count == 10_000)
        #expect(resent.allSatisfy { m in m.history.last?.extra.first { $0.key == "receipt" }?.value["duplicate"] == .bool(true) })
        #expect(try server.messages("ORDERS").count == 10_000)
    }

    @Test func killedMidFlushThenRecoveredEachIdIsInTheStreamOnce() throws {
        let s = try Sandbox()
        let server = try Server(s)
        try server.addStream("ORDERS", "'orders.>'")
        let queued = try queue(s, 3_000, recipients: 50)
        let url = "\(server.url)/orders.{to}?concurrency=32"
        try s.killFlush(["flush", "--transport", url, "--batch", "100"], after: 500)
        let left = try s.sh("msg queue count --status sent").out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(Int(left).map { $0 < 3_000 } == true, "the kill came after the flush: \(left) sent")
        let recovered = try s.sh("msg recover --stale-after 0s --transport '\(url)' > /dev/null && msg flush --transport '\(url)' > /dev/null")
        #expect(recovered.status == 0, "\(recovered.err)")
        #expect(try s.sh("msg queue count --status sent").out.trimmingCharacters(in: .whitespacesAndNewlines) == "3000")
        let stored = try server.messages("ORDERS")
        let storedIDs = stored.compactMap { $0.headers["Nats-Msg-Id"] }
        #expect(storedIDs.count == 3_000 && Set(storedIDs) == Set(queued), "\(storedIDs.count) stored, \(Set(storedIDs).count) ids")
        #expect(stored.allSatisfy { $0.subject.hasPrefix("orders.c") })
    }

    @Test func theServerKilledAndRestartedMidFlushLosesNothingAndStoresNothingTwice() throws {
        let s = try Sandbox()
        let server = try Server(s)
        try server.addStream("ORDERS", "'orders.>'")
        let queued = try queue(s, 4_000, recipients: 4)
        // One message after another, each awaiting its PubAck: the server dies mid-flush.
        let url = "\(server.url)/orders.new"
        let flush = try s.start(["flush", "--transport", url, "--batch", "50"])
        let out = flush.1.fileHandleForReading
        var seen = 0
        while seen < 300 {
            let chunk = out.availableData
            if chunk.isEmpty { break }
            seen += chunk.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
        }
        try server.kill()
        _ = out.readDataToEndOfFile()
        try flush.0.wait()
        // The connection lost: what was not acknowledged is waiting, not dead.
        #expect(flush.0.terminationStatus == 75 || flush.0.terminationStatus == 0, "flush exited \(flush.0.terminationStatus)")
        #expect(try s.sh("msg queue count --status dead").out.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        let sentBefore = try s.sh("msg queue count --status sent").out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(Int(sentBefore).map { $0 < 4_000 } == true, "the server died after the flush: \(sentBefore) sent")
        try server.start()
        let rest = try s.sh("msg retry --now --transport '\(url)' > /dev/null && msg flush --transport '\(url)' > /dev/null")
        #expect(rest.status == 0, "\(rest.err)")
        #expect(try s.sh("msg queue count --status sent").out.trimmingCharacters(in: .whitespacesAndNewlines) == "4000")
        let storedIDs = try server.messages("ORDERS").compactMap { $0.headers["Nats-Msg-Id"] }
        #expect(storedIDs.count == 4_000 && Set(storedIDs) == Set(queued), "\(storedIDs.count) stored, \(Set(storedIDs).count) ids")
    }

    @Test func aSubjectNoStreamTakesIsNamed() throws {
        let s = try Sandbox()
        let server = try Server(s)
        try server.addStream("ORDERS", "'orders.>'")
        _ = try queue(s, 3)
        // One subject for all: the configuration is wrong, nothing becomes dead.
        let fixed = try s.sh("msg flush --transport '\(server.url)/invoices.new'")
        #expect(fixed.status == 78)
        #expect(fixed.err.contains("no stream takes subject invoices.new"), "\(fixed.err)")
        #expect(try s.sh("msg queue count --status queued").out.trimmingCharacters(in: .whitespacesAndNewlines) == "3")
        // A subject made from the record: no stream for it is the configuration's
        // fault too, never the message's: those messages stay queued and are tried
        // again, and the run names the subject once.
        _ = try s.sh("for n in 1 2 3; do echo '{\"to\":\"nowhere\",\"body\":\"b\"}'; done | msg compose | msg queue add")
        let templated = try s.sh("msg flush --transport '\(server.url)/{to}.new' --to nowhere")
        #expect(templated.status == 75, "\(templated.err)")
        #expect(templated.err.components(separatedBy: "no stream takes subject nowhere.new").count == 2, "\(templated.err)")
        #expect(try s.sh("msg queue count --status dead").out.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        let waiting = try records(s.sh("msg queue ls --to nowhere").out)
        #expect(waiting.count == 3 && waiting.allSatisfy { $0.status == .failed && $0.lastError?.code == "unreachable" }, "\(waiting)")
        #expect(waiting.allSatisfy { $0.lastError?.message.contains("no stream takes subject nowhere.new") == true })
        #expect(try server.messages("ORDERS").isEmpty)
        // The stream the URL expects is not the one its subject reaches: configuration too.
        let expected = try s.sh("msg flush --transport '\(server.url)/orders.new?stream=INVOICES'")
        #expect(expected.status == 78 && expected.err.contains("expected stream does not match"), "\(expected.err)")
        #expect(try s.sh("msg queue count --status queued").out.trimmingCharacters(in: .whitespacesAndNewlines) == "3")
    }

    @Test func aFullStreamThatDiscardsNewRejectsWithTheServersWords() throws {
        let s = try Sandbox()
        let server = try Server(s)
        try server.addStream("SMALL", "'small.>'", "--max-msgs 2 --discard new")
        _ = try queue(s, 3)
        let r = try s.sh("msg flush --transport '\(server.url)/small.x'")
        #expect(r.status == 1)
        let dead = try records(s.sh("msg queue ls --status dead").out)
        #expect(dead.count == 1)
        #expect(dead.first?.lastError?.message.contains("maximum messages exceeded") == true, "\(dead.first?.lastError?.message ?? "")")
        #expect(try server.messages("SMALL").count == 2)
    }

    @Test func mutualTLSWithTheServersCertificateAndName() throws {
        let s = try Sandbox()
        try TLSTests().makeCertificates(s)
        let server = try Server(s, options: "--tls server.pem server-key.pem ca.pem --verify")
        let client = "--ca ca.pem --cert client.pem --key client-key.pem"
        try server.addStream("ORDERS", "'orders.>'", client: client)
        _ = try queue(s, 5)
        let base = "\(server.url)/orders.tls?ca=ca.pem"
        // No client certificate: the server refuses the handshake; nothing sent.
        let bare = try s.sh("msg flush --transport '\(base)'")
        #expect(bare.status != 0)
        // A certificate for another name: refused, whatever CA signed it.
        let wrongName = try s.sh("msg flush --transport '\(base)&cert=client.pem&key=client-key.pem&server_name=evil.example'")
        #expect(wrongName.status == 78, "\(wrongName.err)")
        #expect(try server.messages("ORDERS", client: client).isEmpty)
        let good = try s.sh("msg flush --transport '\(base)&cert=client.pem&key=client-key.pem&server_name=localhost'")
        #expect(good.status == 0, "\(good.err)")
        #expect(try server.messages("ORDERS", client: client).count == 5)
    }

    /// The certificate of #49: signed by the trusted CA, its only name IP:127.0.0.1,
    /// its subject `CN=evil.example;common_name=localhost`. Named as localhost, the
    /// server is refused: a name is matched against DNS names, never printed text.
    @Test func aCertificateWhoseOnlyNameIsAnAddressIsNotLocalhost() throws {
        let s = try Sandbox()
        try TLSTests().makeCertificates(s)
        let made = try s.sh("""
            set -e
            openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ip-key.pem 2>/dev/null; chmod 600 ip-key.pem
            openssl req -new -key ip-key.pem -subj '/CN=evil.example;common_name=localhost' -out ip.csr
            openssl x509 -req -in ip.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 \\
              -extfile <(printf 'subjectAltName=IP:127.0.0.1\\n') -out ip.pem 2>/dev/null
            """)
        #expect(made.status == 0, "\(made.err)")
        let server = try Server(s, options: "--tls ip.pem ip-key.pem ca.pem")
        try server.addStream("ORDERS", "'orders.>'", client: "--ca ca.pem")
        _ = try queue(s, 1)
        let byName = try s.sh("msg flush --transport 'nats://localhost:\(server.port)/orders.x?ca=ca.pem'")
        #expect(byName.status == 78 && byName.err.contains("hostname mismatch"), "\(byName.err)")
        let named = try s.sh("msg flush --transport '\(server.url)/orders.x?ca=ca.pem&server_name=localhost'")
        #expect(named.status == 78, "\(named.err)")
        #expect(try server.messages("ORDERS", client: "--ca ca.pem").isEmpty)
        // Named by the address it has, it is the server.
        let byAddress = try s.sh("msg flush --transport '\(server.url)/orders.x?ca=ca.pem'")
        #expect(byAddress.status == 0, "\(byAddress.err)")
        #expect(try server.messages("ORDERS", client: "--ca ca.pem").count == 1)
    }

    /// A user with a password, and a user with an NKey (its seed made by
    /// scripts/nats through openssl): both authenticate; a wrong password does not.
    @Test func aPasswordAndAnNKeyFromPrivateFiles() throws {
        let s = try Sandbox()
        let password = try s.file("password", "pa55-word\n")
        let wrong = try s.file("wrong", "guess\n")
        chmod(password, 0o600)
        chmod(wrong, 0o600)
        let made = try s.sh("'\(NATSTests.script)' nkey seed.nk")
        let publicKey = made.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(made.status == 0 && publicKey.hasPrefix("U") && publicKey.count == 56, "\(made.out)\(made.err)")
        let server = try Server(s, options: "--user ann password --nkey \(publicKey)")
        let admin = "--user ann password"
        try server.addStream("ORDERS", "'orders.>'", client: admin)
        _ = try queue(s, 2, recipients: 2)
        let refused = try s.sh("msg flush --transport '\(server.url)/orders.x?user=ann&password_file=wrong'")
        #expect(refused.status == 78 && refused.err.contains("refused the credentials"), "\(refused.err)")
        let byPassword = try s.sh("msg flush --transport '\(server.url)/orders.x?user=ann&password_file=password' --to c1")
        #expect(byPassword.status == 0 && ids(byPassword.out).count == 1, "\(byPassword.err)")
        let byKey = try s.sh("msg flush --transport '\(server.url)/orders.x?nkey=\(publicKey)&nkey_seed=seed.nk'")
        #expect(byKey.status == 0 && ids(byKey.out).count == 1, "\(byKey.err)")
        #expect(try server.messages("ORDERS", client: admin).count == 2)
    }

    @Test func aTokenFromAPrivateFileAndAMisspeltParameterSendsNothing() throws {
        let s = try Sandbox()
        let token = try s.file("token", "s3cret-token\n")
        chmod(token, 0o600)
        let server = try Server(s, options: "--token token")
        try server.addStream("ORDERS", "'orders.>'", client: "--token token")
        _ = try queue(s, 2)
        let misspelt = try s.sh("msg flush --transport '\(server.url)/orders.x?token_flie=token'")
        #expect(misspelt.status == 78)
        #expect(misspelt.err.contains("did you mean token_file=?"), "\(misspelt.err)")
        let none = try s.sh("msg flush --transport '\(server.url)/orders.x'")
        #expect(none.status == 78, "\(none.err)")
        chmod(token, 0o644)
        let open = try s.sh("msg flush --transport '\(server.url)/orders.x?token_file=token'")
        #expect(open.status == 78 && open.err.contains("token"), "\(open.err)")
        chmod(token, 0o600)
        // A credentials file libnats cannot read is the configuration's fault, named.
        let creds = try s.file("user.creds", "not a creds file\n")
        chmod(creds, 0o600)
        let badCreds = try s.sh("msg flush --transport '\(server.url)/orders.x?creds=user.creds'")
        #expect(badCreds.status == 78 && badCreds.err.contains("no nkey user seed found"), "\(badCreds.err)")
        let good = try s.sh("msg flush --transport '\(server.url)/orders.x?token_file=token'")
        #expect(good.status == 0, "\(good.err)")
        #expect(try server.messages("ORDERS", client: "--token token").count == 2)
    }
}
