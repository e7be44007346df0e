import Foundation
import MsgEngine
import MsgKit
import Testing

/// `msg web`'s rules, request by request, on a real SQLite store with no server:
/// what a page shows as text, which requests are refused and why, and what an
/// action leaves in a message's history.
@Suite struct DashboardRequestTests {
    let loader = PluginLoader()

    func dashboard(actions: Bool = false, token: String? = nil, addressedOnly: Bool = false, messages: [Message]) throws -> (Dashboard, any Store) {
        let url = "sqlite:\(temporaryDirectory())/q.sqlite"
        let store = try loader.openStore(url)
        _ = try store.add(messages)
        var options = Dashboard.Options()
        options.allowActions = actions
        options.accessToken = token
        options.addressedOnly = addressedOnly
        options.storeName = "sqlite:test"
        let page = Dashboard(store: store, options: options, route: { ("transport file:/tmp/out from default · retry … " + $0, "file:/tmp/out from default") },
                             reporter: Reporter { _ in })
        return (page, try loader.openStore(url, access: .read))
    }

    /// A queued message; ids sort as they were made, so FIFO order is theirs.
    func message(_ id: String, to: String = "a@example.com", body: String = "hi") -> Message {
        Message(id: id, to: to, body: body, now: Timestamp(milliseconds: 1_700_000_000_000 + Int64(id.suffix(4), radix: 16)!))
    }

    func get(_ d: Dashboard, _ path: String, headers: [WebHeader] = []) -> (status: Int, text: String, headers: [WebHeader]) {
        let (p, q) = path.firstIndex(of: "?").map { (String(path[..<$0]), String(path[path.index(after: $0)...])) } ?? (path, "")
        let r = d.respond(WebRequest(method: "GET", path: p, query: q, headers: headers))
        return (r.status, String(decoding: r.body, as: UTF8.self), r.headers)
    }

    func post(_ d: Dashboard, _ path: String, _ form: String, headers: [WebHeader] = [WebHeader("host", "127.0.0.1:9470")]) -> (status: Int, text: String) {
        let r = d.respond(WebRequest(method: "POST", path: path, headers: headers, body: Array(form.utf8)))
        return (r.status, String(decoding: r.body, as: UTF8.self) + (r.headers.first { $0.name == "location" }?.value ?? ""))
    }

    static func token(in page: String) -> String {
        guard let r = page.range(of: #"name="token" value="[0-9a-f]+""#, options: .regularExpression) else { return "" }
        return String(page[r].dropFirst(20).dropLast())
    }

    @Test func everyStringOfAMessageIsText() throws {
        var m = message("01890000-0000-7000-8000-000000000001", to: "\"><script>alert(1)</script>", body: "<script>alert(2)</script>")
        m.headers = Headers([("X-Evil", "<img src=x onerror=alert(3)>")])
        m.extra = [.init("note", .string("</td><iframe src=javascript:alert(4)>"))]
        let (d, _) = try dashboard(messages: [m])
        let page = get(d, "/messages/01890000-0000-7000-8000-000000000001")
        #expect(page.status == 200)
        for hostile in ["<script>alert", "<img src", "<iframe", "\"><script>"] {
            #expect(!page.text.contains(hostile), "\(hostile) came through as markup")
        }
        #expect(page.text.contains("&lt;script&gt;alert(2)&lt;/script&gt;"))
        #expect(page.text.contains("&lt;img src=x onerror=alert(3)&gt;"))
        #expect(page.text.contains("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"))
        let list = get(d, "/messages")
        #expect(!list.text.contains("<script>alert") && list.text.contains("&lt;script&gt;alert(1)"))
        let csp = page.headers.first { $0.name == "content-security-policy" }?.value ?? ""
        #expect(csp.contains("script-src 'self'") && csp.contains("default-src 'none'") && !csp.contains("unsafe-inline"), "\(csp)")
    }

    @Test func aPostIsRefusedWithoutActionsTheTokenOrTheOrigin() throws {
        let id = "01890000-0000-7000-8000-000000000002"
        let (readOnly, _) = try dashboard(messages: [message(id)])
        #expect(post(readOnly, "/messages/\(id)/hold", "token=x").status == 403)
        #expect(post(readOnly, "/messages/\(id)/hold", "token=x").text.contains("actions are off"))

        let (d, store) = try dashboard(actions: true, messages: [message(id)])
        let token = Self.token(in: get(d, "/messages/\(id)").text)
        #expect(token.count == 32, "the page carries a session token")
        #expect(post(d, "/messages/\(id)/hold", "reason=x").status == 403)
        // Another token: its first digit changed (one in sixteen tokens starts with 0).
        let forged = (token.first == "0" ? "1" : "0") + token.dropFirst()
        #expect(post(d, "/messages/\(id)/hold", "token=\(forged)&reason=x").status == 403)
        #expect(post(d, "/messages/\(id)/hold", "token=\(token)&reason=x",
                     headers: [WebHeader("host", "127.0.0.1:9470"), WebHeader("origin", "http://evil.example")]).status == 403)
        #expect(post(d, "/messages/\(id)/hold", "token=\(token)&reason=x",
                     headers: [WebHeader("host", "127.0.0.1:9470"), WebHeader("sec-fetch-site", "cross-site")]).status == 403)
        #expect(try store.get(id)?.message.status == .queued, "nothing changed")

        let held = post(d, "/messages/\(id)/hold", "token=\(token)&reason=over+quota%21",
                        headers: [WebHeader("host", "127.0.0.1:9470"), WebHeader("origin", "http://127.0.0.1:9470"),
                                  WebHeader("sec-fetch-site", "same-origin")])
        #expect(held.status == 303 && held.text == "/messages/\(id)", "\(held)")
        let after = try #require(try store.get(id)?.message)
        #expect(after.status == .held)
        #expect(after.history.last?.event == "held")
        #expect(after.history.last?.extra.contains { $0.key == "reason" && $0.value == .string("over quota!") } == true)
        // A retry of what is not dead says why, and changes nothing.
        let retry = post(d, "/messages/\(id)/retry", "token=\(token)")
        #expect(retry.status == 400 && retry.text.contains("is not dead"), "\(retry)")
    }

    @Test func anAccessTokenIsAskedOfEveryRequest() throws {
        let (d, _) = try dashboard(token: "s3cret", messages: [])
        #expect(get(d, "/").status == 401)
        #expect(get(d, "/").headers.contains { $0.name == "www-authenticate" })
        #expect(get(d, "/", headers: [WebHeader("authorization", "Basic " + Data("ops:wrong".utf8).base64EncodedString())]).status == 401)
        #expect(get(d, "/", headers: [WebHeader("authorization", "Basic " + Data("ops:s3cret".utf8).base64EncodedString())]).status == 200)
        #expect(get(d, "/", headers: [WebHeader("authorization", "Bearer s3cret")]).status == 200)
        #expect(get(d, "/assets/app.js", headers: [WebHeader("authorization", "Bearer s3cre")]).status == 401)
    }

    /// Without a token, a request must name the server by its address: a page whose
    /// own name an attacker pointed at 127.0.0.1 (DNS rebinding) reads nothing.
    @Test func withoutATokenOnlyTheAddressIsAnswered() throws {
        let (d, _) = try dashboard(addressedOnly: true, messages: [])
        for host in ["127.0.0.1:9470", "[::1]:9470", "localhost:9470", "10.1.2.3:80"] {
            #expect(get(d, "/", headers: [WebHeader("host", host)]).status == 200, "\(host)")
        }
        for host in ["evil.example:9470", "127.0.0.1.evil.example:9470", "1.2.3:9470"] {
            let r = get(d, "/", headers: [WebHeader("host", host)])
            #expect(r.status == 403 && r.text.contains("open the dashboard by its address"), "\(host): \(r.status)")
        }
    }

    @Test func badPathsAndParametersSayWhat() throws {
        let (d, _) = try dashboard(messages: [message("01890000-0000-7000-8000-000000000003")])
        #expect(get(d, "/nothing").status == 404)
        #expect(get(d, "/messages/01890000-0000-7000-8000-00000000ffff").status == 404)
        let bad = get(d, "/messages?status=lost")
        #expect(bad.status == 400 && bad.text.contains("status=lost is not a status"), "\(bad.text)")
        #expect(get(d, "/messages?after=nonsense").status == 400)
        #expect(d.respond(WebRequest(method: "DELETE", path: "/")).status == 405)
        #expect(get(d, "/assets/app.css").status == 200)
    }

    @Test func destinationsSortByAColumn() throws {
        let messages = (0..<6).map { i in message("01890000-0000-7000-8000-00000000001\(i)", to: i < 3 ? "b@x" : i < 5 ? "a@x" : "c@x") }
        let (d, _) = try dashboard(messages: messages)
        func order(_ path: String) -> [String] {
            get(d, path).text.matches(of: /<td><a href="\/messages\?to=[^"]*">([^<]*)<\/a>/).map { String($0.output.1) }
        }
        #expect(order("/destinations") == ["b@x", "a@x", "c@x"], "by queued, most first")
        #expect(order("/destinations?sort=destination&dir=asc") == ["a@x", "b@x", "c@x"])
        #expect(order("/destinations?sort=queued&dir=asc") == ["c@x", "a@x", "b@x"])
        #expect(get(d, "/destinations").text.contains("file:/tmp/out from default"), "the transport each is routed to")
    }
}
