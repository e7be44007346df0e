import Foundation
@testable import HTTPTransport
import MsgKit
import MsgKitTesting
import MsgSupport
import Testing

/// The http:// and https:// transport against a real server on loopback.
@Suite struct HTTPTransportTests {
    func open(_ url: String) throws -> HTTPTransport { try HTTPTransport(url: PluginURL(url)) }

    func failure(_ outcome: DeliveryOutcome) -> (MsgError.Code, String, Int64?)? {
        guard case .failed(let e, let wait) = outcome else { return nil }
        return (e.code, e.message, wait?.milliseconds)
    }

    @Test func passesTransportConformance() throws {
        let dir = temporaryDirectory()
        let server = try WebhookServer(directory: dir)
        let base = "http://127.0.0.1:\(server.port)"
        try TransportConformance.run(faults: TransportFaults(failing: { code in
            switch code {
            case .remote: try open("\(base)/status/500")
            case .rateLimited: try open("\(base)/status/429?query.retry_after=3")
            case .rejected: try open("\(base)/status/422")
            case .unreachable: try open("http://127.0.0.1:1/hook")
            case .timeout: try open("\(base)/slow/3000")
            default: nil
            }
        }, slow: { _ in try open("\(base)/slow/3000") })) {
            // A server of its own for each scenario, which the closures keep running.
            let fresh = try WebhookServer(directory: temporaryDirectory())
            let url = "http://127.0.0.1:\(fresh.port)/hook?lookup=http://127.0.0.1:\(fresh.port)/applied/%7Bid%7D"
            return TransportUnderTest(transport: try open(url), deliveries: { try fresh.applied() }, reopen: { try open(url) })
        }
    }

    @Test func theWholeStatusTable() throws {
        let dir = temporaryDirectory()
        let server = try WebhookServer(directory: dir)
        let base = "http://127.0.0.1:\(server.port)"
        let m = EncodedMessage(Fixtures.message(1))
        let inAMinute = try shell("TZ=GMT date -d '+60 seconds' '+%a, %d %b %Y %H:%M:%S GMT'", in: dir).trimmingNewlines
        let expected: [(String, MsgError.Code?, Int64?)] = [
            ("hook", nil, nil), ("status/200", nil, nil), ("status/201", nil, nil), ("status/202", nil, nil),
            ("status/429?query.retry_after=7", .rateLimited, 7000), ("status/429", .rateLimited, nil),
            ("status/503?query.retry_after=120", .rateLimited, 120_000), ("status/503", .remote, nil),
            ("status/408", .remote, nil), ("status/425", .remote, nil), ("status/500", .remote, nil), ("status/502", .remote, nil),
            ("status/400", .rejected, nil), ("status/404", .rejected, nil), ("status/410", .rejected, nil), ("status/422", .rejected, nil),
            ("status/401", .config, nil), ("status/301", .config, nil), ("status/307", .config, nil),
        ]
        for (path, code, wait) in expected {
            let outcome = try open("\(base)/\(path)").deliver([m], deadline: .seconds(5))[0]
            if let code {
                let got = failure(outcome)
                #expect(got?.0 == code, "\(path): \(outcome)")
                #expect(got?.2 == wait, "\(path): Retry-After")
                #expect(got?.1.contains("127.0.0.1:\(server.port)") == true, "\(path): the message names the host: \(got?.1 ?? "")")
            } else {
                #expect(outcome == .delivered(confirmed: false), "\(path)")
            }
        }
        // Retry-After as an HTTP date, a minute ahead (to the second).
        let dated = failure(try open("\(base)/status/429?query.retry_after=\(inAMinute.replacingAll(" ", with: "%20"))").deliver([m], deadline: .seconds(5))[0])
        #expect(dated?.0 == .rateLimited)
        #expect((57_000...61_000).contains(dated?.2 ?? 0), "Retry-After \(inAMinute): \(String(describing: dated))")
        // Followed when asked.
        #expect(try open("\(base)/redirect?follow_redirects=yes").deliver([m], deadline: .seconds(5)) == [.delivered(confirmed: false)])
        // No answer by the deadline, and nobody listening.
        #expect(failure(try open("\(base)/slow/3000").deliver([m], deadline: MsgDuration(milliseconds: 300))[0])?.0 == .timeout)
        #expect(failure(try open("http://127.0.0.1:1/hook").deliver([m], deadline: .seconds(5))[0])?.0 == .unreachable)
        // A name that does not exist (RFC 6761's .invalid) is a failed attempt that
        // counts, not an outage (HostLookup): retried forever it would count nothing.
        let nowhere = failure(try open("http://no-such-host.invalid/hook").deliver([m], deadline: .seconds(5))[0])
        #expect(nowhere?.0 == .remote && nowhere?.1.contains("no such host") == true, "\(String(describing: nowhere))")
    }

    @Test func whatTheServerReceives() throws {
        let dir = temporaryDirectory()
        let server = try WebhookServer(directory: dir)
        var m = Fixtures.message(1)
        m.headers = [("Content-Type", "text/markdown")]
        let record = EncodedMessage(m)
        _ = try open("http://127.0.0.1:\(server.port)/a?query.code=K&concurrency=2").deliver([record], deadline: .seconds(5))
        _ = try open("http://127.0.0.1:\(server.port)/b?input=body").deliver([record], deadline: .seconds(5))
        // An id that could end a header line is never sent.
        var hostile = Fixtures.message(2)
        hostile.id = "x\r\nX-Injected: yes"
        let refused = try open("http://127.0.0.1:\(server.port)/c").deliver([EncodedMessage(hostile)], deadline: .seconds(5))
        #expect(failure(refused[0])?.0 == .rejected)
        let seen = try server.requests()
        #expect(seen.count == 2)
        #expect(seen[0]["path"] as? String == "/a?code=K", "msg's parameters are taken out, the server's (query.NAME) kept as NAME")
        #expect(seen[0]["key"] as? String == m.id)
        #expect(seen[0]["content_type"] as? String == "application/json")
        #expect(seen[0]["body"] as? String == String(decoding: record.deliveredJSON, as: UTF8.self))
        #expect(seen[1]["content_type"] as? String == "text/markdown")
        #expect(seen[1]["body"] as? String == m.body)
    }

    /// Signed as Standard Webhooks specifies, checked by the server's own code.
    @Test func signaturesVerifyOnTheServer() throws {
        let dir = temporaryDirectory()
        let secret = "whsec_" + Base64.encode((0..<32).map { UInt8($0 * 7 & 0xff) })
        let server = try WebhookServer(["--secret", secret], directory: dir)
        let secretFile = dir + "/secret"
        try secret.write(toFile: secretFile, atomically: true, encoding: .utf8)
        #expect(throws: MsgError(.config, "")) { try open("http://127.0.0.1:\(server.port)/h?signing_secret_file=\(secretFile)") }
        chmod(secretFile, 0o600)
        let ms = (0..<5).map { EncodedMessage(Fixtures.message($0)) }
        #expect(try open("http://127.0.0.1:\(server.port)/h?signing_secret_file=\(secretFile)&concurrency=3").deliver(ms, deadline: .seconds(5))
                == Array(repeating: .delivered(confirmed: false), count: 5))
        // Another secret: the server refuses it.
        let wrong = "whsec_" + Base64.encode(Array(repeating: 1, count: 32))
        setenv("MSG_TEST_WRONG_SECRET", wrong, 1)
        let refused = try open("http://127.0.0.1:\(server.port)/h?signing_secret_env=MSG_TEST_WRONG_SECRET").deliver([EncodedMessage(Fixtures.message(9))], deadline: .seconds(5))
        #expect(failure(refused[0])?.0 == .config)
        let seen = try server.requests()
        #expect(seen.filter { $0["signature_ok"] as? Bool == true }.count == 5)
        #expect(seen.filter { $0["signature_ok"] as? Bool == false }.count == 1)
    }

    @Test func tlsWithAPrivateCAAWrongCAAndAClientCertificate() throws {
        let dir = temporaryDirectory()
        try makeCertificates(in: dir)
        let server = try WebhookServer(["--tls", "\(dir)/server.pem", "\(dir)/server-key.pem"], directory: dir)
        let m = [EncodedMessage(Fixtures.message(1))]
        let url = "https://127.0.0.1:\(server.port)/hook"
        #expect(try open("\(url)?ca_file=\(dir)/ca.pem").deliver(m, deadline: .seconds(5)) == [.delivered(confirmed: false)])
        for refused in [url, "\(url)?ca_file=\(dir)/other-ca.pem"] {
            let got = failure(try open(refused).deliver(m, deadline: .seconds(5))[0])
            #expect(got?.0 == .config, "\(refused)")
            #expect(got?.1.hasPrefix("TLS with 127.0.0.1:\(server.port) failed") == true, "\(got?.1 ?? "")")
        }

        let mutual = try WebhookServer(["--tls", "\(dir)/server.pem", "\(dir)/server-key.pem", "--client-ca", "\(dir)/ca.pem"], directory: temporaryDirectory())
        let murl = "https://127.0.0.1:\(mutual.port)/hook?ca_file=\(dir)/ca.pem"
        #expect(try open("\(murl)&cert_file=\(dir)/client.pem&key_file=\(dir)/client-key.pem").deliver(m, deadline: .seconds(5)) == [.delivered(confirmed: false)])
        #expect(failure(try open(murl).deliver(m, deadline: .seconds(5))[0]) != nil, "without a client certificate")
        #expect(try mutual.applied().count == 1)
    }

    @Test func keepAliveAndConcurrencyKeepTheOrderOfOutcomes() throws {
        let dir = temporaryDirectory()
        let server = try WebhookServer(directory: dir)
        let base = "http://127.0.0.1:\(server.port)"
        // Alternate slow and failing paths through one transport is not possible (one URL),
        // so the order is checked on one slow path: 16 in flight, each its own outcome.
        let ms = (0..<64).map { EncodedMessage(Fixtures.message($0)) }
        let started = Date()
        let transport = try open("\(base)/slow/200?concurrency=16")
        let outcomes = transport.deliver(ms, deadline: .seconds(10))
        let took = Date().timeIntervalSince(started)
        #expect(outcomes == Array(repeating: .delivered(confirmed: false), count: 64))
        #expect(took < 64 * 0.2 / 2, "64 requests of 200 ms took \(took) s: not concurrent")
        let keys = try server.requests().compactMap { $0["key"] as? String }
        #expect(Set(keys) == Set(ms.map(\.message.id)))
        // Kept alive, within a call and to the next: 80 requests over at most 16 connections.
        let more = (64..<80).map { EncodedMessage(Fixtures.message($0)) }
        #expect(transport.deliver(more, deadline: .seconds(10)) == Array(repeating: .delivered(confirmed: false), count: 16))
        let connections = Set(try server.requests().compactMap { $0["peer"] as? Int })
        #expect(connections.count <= 16, "\(connections.count) connections for 80 requests")
    }

    @Test func badParametersAreConfigurationErrors() throws {
        let dir = temporaryDirectory()
        for url in ["http:///nohost", "http://u:p@example.com/", "http://x/?concurrency=0", "http://x/?input=xml",
                    "http://x/?lookup=http://x/no-id", "http://x/?cert_file=/etc/hostname", "http://x/?ca_file=/nonexistent",
                    "http://x/?signing_secret_env=MSG_TEST_UNSET_VARIABLE", "http://x/?follow_redirects=maybe",
                    "http://x/?headers_file=\(dir)/none"] {
            #expect(throws: MsgError(.config, ""), "\(url)") { try open(url) }
        }
    }

    @Test func headersFileAddsHeaders() throws {
        let dir = temporaryDirectory()
        let file = dir + "/headers"
        try "# the API's key\nAuthorization: Bearer abc\n\nX-Team: ops\n".write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        let settings = try HTTPSettings(PluginURL("https://api.example.com/v1?headers_file=\(file)"))
        #expect(settings.extraHeaders.map { "\($0.0)=\($0.1)" } == ["Authorization=Bearer abc", "X-Team=ops"])
        #expect(settings.endpoint == "https://api.example.com/v1")
        try "Authorization Bearer abc\n".write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        #expect(throws: MsgError(.config, "")) { try HTTPSettings(PluginURL("https://api.example.com/v1?headers_file=\(file)")) }
    }
}
