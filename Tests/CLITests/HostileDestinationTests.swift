import Foundation
import MsgKit
import MsgKitTesting
import Testing

/// http:// and exec: against careless and hostile receivers, through the real
/// binary: no answer crashes a flush or leaves a message `sending`, no redirect
/// makes an unsent message `sent`, every attempt that may have arrived counts, the
/// deadline bounds the run, an answer costs bounded memory, a value is never cut.
@Suite(.timeLimit(.minutes(5))) struct HostileDestinationTests {
    /// scripts/webhook-server on loopback, logging every request.
    final class Receiver {
        let process = TestProcess()
        let port: String
        let log: String

        /// `arguments`: the server's own (`--tls CERT KEY`).
        init(_ s: Sandbox, name: String = "server", arguments: [String] = []) throws {
            log = s.home + "/\(name).ndjson"
            process.executableURL = URL(fileURLWithPath: DestinationTransportTests.repository + "/scripts/webhook-server")
            process.arguments = ["--log", log] + arguments
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            var line = Data()
            while let b = try out.fileHandleForReading.read(upToCount: 1), !b.isEmpty, b != Data([10]) { line += b }
            port = String(decoding: line, as: UTF8.self).replacingOccurrences(of: "listening on ", with: "")
        }

        deinit {
            kill(process.processIdentifier, SIGKILL)
            try? process.wait()
        }

        var base: String { "http://127.0.0.1:\(port)" }

        /// The logged requests.
        func requests() throws -> [[String: Any]] {
            guard let text = try? String(contentsOfFile: log, encoding: .utf8) else { return [] }
            return try text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:] }
        }
    }

    func plugins() throws -> [String: String] {
        ["MSG_PLUGIN_PATH": try DestinationTransportTests().networkPlugins()]
    }

    /// A 429 or 503 whose Retry-After is a date in year 1,000,000,000 (in each of
    /// the three forms) is a deferral with no usable wait: flush exits 75 and
    /// nothing is left `sending` (it crashed on the arithmetic before).
    @Test func absurdRetryAfterDatesDeferAndLeaveNothingSending() throws {
        let s = try Sandbox()
        let server = try Receiver(s)
        let env = try plugins()
        for date in ["Sun, 06 Nov 1000000000 08:49:37 GMT", "Sunday, 06-Nov-1000000000 08:49:37 GMT", "Sun Nov  6 08:49:37 1000000000",
                     "Sun, 06 Nov -9223372036854775808 08:49:37 GMT", "99999999999999999999999"] {
            let value = date.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            for code in [429, 503] {
                let r = try s.sh("""
                    msg compose --to a@example.com --body x --enqueue > /dev/null
                    msg flush --transport '\(server.base)/status/\(code)?query.retry_after=\(value)' > /dev/null; echo $?
                    msg queue count --status sending; msg queue ls --format csv | tail -n +2 | cut -d, -f1 | msg queue rm > /dev/null
                    """, env: env)
                #expect(r.lines.prefix(2) == ["75", "0"], "\(code) Retry-After \(date): \(r.out) \(r.err)")
            }
        }
    }

    /// A tcp:// receiver that asks for a pause of 106751991167 days (near Int64's
    /// end in milliseconds): a deferral waiting at most a day, never an overflow.
    @Test func anAbsurdPauseFromATCPReceiverIsADay() throws {
        let s = try Sandbox()
        _ = try s.file("receiver.py", """
            import json, socket, sys
            l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(8)
            print(l.getsockname()[1], flush=True)
            c, _ = l.accept(); f = c.makefile("rwb")
            for line in f:
                r = json.loads(line)
                if r.get("op") == "hello":
                    f.write(b'{"op":"hello","ok":true,"version":1}\\n')
                else:
                    f.write(json.dumps({"id": r.get("id"), "ok": False, "error": {"code": "rate_limited", "message": "later",
                        "retryable": True, "retry_after": "106751991167d"}}).encode() + b"\\n")
                f.flush()
            """)
        let r = try s.sh("""
            python3 receiver.py > port & rcv=$!
            until [ -s port ]; do sleep 0.05; done
            msg compose --to a@example.com --body x --enqueue > /dev/null
            msg flush --transport "tcp://127.0.0.1:$(cat port)" > /dev/null; echo $?
            kill -9 $rcv
            msg queue count --status sending
            msg queue ls --format csv | tail -n +2 | cut -d, -f2,11
            """)
        #expect(r.lines.prefix(2) == ["75", "0"], "\(r.out) \(r.err)")
        let next = r.lines.last.flatMap { $0.split(separator: ",").last }.flatMap { Timestamp(rfc3339: String($0)) }
        #expect(next.map { $0 <= Timestamp.now().adding(.seconds(86_401)) } == true, "waits at most a day: \(r.out)")
    }

    /// With follow_redirects=yes a 301, 302 or 303 would turn the POST into a GET
    /// without the body: msg does not follow it, the run stops (78) and the message
    /// stays queued with no attempt; a 307 or 308 repeats the POST and counts.
    @Test func aRedirectToAGetNeverMarksAMessageSent() throws {
        let s = try Sandbox()
        let server = try Receiver(s)
        let env = try plugins()
        for code in [301, 302, 303] {
            let r = try s.sh("""
                msg compose --to a@example.com --body x --enqueue > /dev/null
                msg flush --transport '\(server.base)/status/\(code)?follow_redirects=yes' > /dev/null; echo $?
                msg queue ls --format csv | tail -n +2 | cut -d, -f2,3
                msg queue ls --format csv | tail -n +2 | cut -d, -f1 | msg queue rm > /dev/null
                """, env: env)
            #expect(r.lines.prefix(2) == ["78", "queued,0"], "\(code): \(r.out) \(r.err)")
            #expect(r.err.contains("GET"), "says why: \(r.err)")
        }
        #expect(try server.requests().filter { $0["method"] as? String == "GET" }.isEmpty, "no GET was sent")
        let followed = try s.sh("""
            msg compose --to a@example.com --body x --enqueue > /dev/null
            msg flush --transport '\(server.base)/redirect?query.code=307&follow_redirects=yes' > /dev/null; echo $?
            msg queue ls --format csv | tail -n +2 | cut -d, -f2
            """, env: env)
        #expect(followed.lines == ["0", "sent"], "\(followed.out) \(followed.err)")
        let posts = try server.requests().filter { $0["path"] as? String == "/hook" }
        #expect(posts.count == 1 && posts.first?["method"] as? String == "POST" && (posts.first?["body"] as? String ?? "").contains("\"body\":\"x\""))
    }

    /// Credentials (headers_file) and the webhook signature never go to another
    /// origin; the message is still posted there, with its Idempotency-Key.
    @Test func aRedirectToAnotherOriginCarriesNoCredentials() throws {
        let s = try Sandbox()
        let first = try Receiver(s, name: "first")
        let other = try Receiver(s, name: "other")
        let env = try plugins()
        let r = try s.sh("""
            printf 'Authorization: Bearer s3cret\\r\\nX-Api-Key: k3y\\r\\n' > headers; chmod 600 headers
            printf 'whsec_%s' "$(printf 0123456789abcdef0123456789abcdef | base64)" > secret; chmod 600 secret
            msg compose --to a@example.com --body x --enqueue > /dev/null
            location=$(printf '%s/hook' '\(other.base)' | sed 's/:/%3A/g; s#/#%2F#g')
            msg flush --transport "\(first.base)/redirect?query.code=308&query.location=$location&follow_redirects=yes&headers_file=$PWD/headers&signing_secret_file=$PWD/secret" > /dev/null; echo $?
            """, env: env)
        #expect(r.lines == ["0"], "\(r.out) \(r.err)")
        let there = try other.requests()
        #expect(there.count == 1, "\(there)")
        let headers = (there.first?["headers"] as? [String: String] ?? [:]).reduce(into: [String: String]()) { $0[$1.key.lowercased()] = $1.value }
        #expect(headers["authorization"] == nil && headers["x-api-key"] == nil, "credentials went to another origin: \(headers)")
        #expect(headers["webhook-signature"] == nil, "the signature went to another origin: \(headers)")
        #expect(headers["idempotency-key"] != nil)
        let here = (try first.requests().first?["headers"] as? [String: String] ?? [:]).reduce(into: [String: String]()) { $0[$1.key.lowercased()] = $1.value }
        #expect(here["x-api-key"] == "k3y" && here["authorization"] == "Bearer s3cret", "a CRLF headers file gives two headers: \(here)")
    }

    /// A misspelt parameter (the issue's `signing_secret_flie=`), one that names a
    /// secret, or any other that is not msg's, is refused before anything is sent:
    /// 78, naming it, and the server sees no request; a parameter of the server's
    /// own query, written `query.NAME=VALUE`, goes to it as `NAME=VALUE`.
    @Test func aMisspeltParameterSendsNothing() throws {
        let s = try Sandbox()
        let server = try Receiver(s)
        let env = try plugins()
        _ = try s.file("secret", "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0")
        chmod(s.home + "/secret", 0o600)
        for (parameter, said) in [("signing_secret_flie=secret", "unknown parameter 'signing_secret_flie' (did you mean signing_secret_file=?)"),
                                  ("input=body&concurency=4", "unknown parameter 'concurency' (did you mean concurrency=?)"),
                                  ("api_password=hunter2", "unknown parameter 'api_password'"),
                                  ("code=K", "unknown parameter 'code'; msg's are input, content_type, concurrency, follow_redirects, signing_secret_file, signing_secret_env, headers_file, ca_file, cert_file, key_file, lookup, and one of the server's own query is written query.code=VALUE")] {
            let r = try s.sh("""
                [ -e queued ] || { msg compose --to a@example.com --body x --enqueue > /dev/null; touch queued; }
                msg flush --transport '\(server.base)/hook?\(parameter)' > /dev/null; echo $?
                msg queue count --status queued
                """, env: env)
            #expect(r.lines == ["78", "1"], "\(parameter): \(r.out) \(r.err)")
            #expect(r.err.contains(said), "\(parameter): \(r.err)")
        }
        #expect(try server.requests().isEmpty, "the server saw no request")
        let own = try s.sh("msg flush --transport '\(server.base)/hook?query.code=K&concurrency=2' > /dev/null; echo $?", env: env)
        #expect(own.lines == ["0"], "\(own.err)")
        #expect(try server.requests().compactMap { $0["path"] as? String }.allSatisfy { $0 == "/hook?code=K" })
    }

    /// A connection reset after the whole request was written: the server may have
    /// acted on it, so it is an attempt; with `--max-attempts 3` the third makes
    /// the message dead.
    @Test func aResetAfterTheRequestCountsAsAnAttempt() throws {
        let s = try Sandbox()
        let server = try Receiver(s)
        let env = try plugins()
        let r = try s.sh("""
            msg compose --to a@example.com --body x --enqueue > /dev/null
            t='\(server.base)/reset'
            msg flush --max-attempts 3 --transport "$t" > /dev/null; echo $?
            msg retry --now --transport "$t" > /dev/null; echo $?
            msg retry --now --transport "$t" > /dev/null; echo $?
            msg queue ls --format csv | tail -n +2 | cut -d, -f2,3,13
            """, env: env)
        #expect(r.lines == ["75", "75", "1", "dead,3,remote"], "\(r.out) \(r.err)")
        #expect(try server.requests().count == 3, "posted three times, no more")
    }

    /// A host whose backlog is full drops SYNs: the attempt ends at the deadline,
    /// and so does the run (a fixed 10 s connect timeout held it before).
    @Test func aHostThatDropsSYNsHoldsTheRunNoLongerThanTheDeadline() throws {
        let s = try Sandbox()
        let env = try plugins()
        _ = try s.file("blackhole.py", """
            import socket, sys, time
            l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(0)
            held = []
            for _ in range(4):
                c = socket.socket(); c.setblocking(False)
                try: c.connect(l.getsockname())
                except BlockingIOError: pass
                held.append(c)
            print(l.getsockname()[1], flush=True)
            time.sleep(60)
            """)
        let r = try s.sh("""
            python3 blackhole.py > port & hole=$!
            until [ -s port ]; do sleep 0.05; done
            msg compose --to a@example.com --body x --enqueue > /dev/null
            start=$(date +%s%N)
            msg flush --deadline 2s --transport "http://127.0.0.1:$(cat port)/hook" > /dev/null; echo $?
            echo $(( ($(date +%s%N) - start) / 1000000 ))
            kill -9 $hole
            msg queue ls --format csv | tail -n +2 | cut -d, -f2,3
            """, env: env)
        #expect(r.lines.first == "75", "\(r.out) \(r.err)")
        let elapsed = Int(r.lines.dropFirst().first ?? "") ?? .max
        #expect(elapsed < 6000, "the run took \(elapsed) ms with a 2 s deadline")
        #expect(r.lines.last == "failed,0", "nothing reached the host: not an attempt; \(r.out)")
    }

    /// A 100 MB answer (with a length or chunked, on a 2xx or a 5xx) is read no
    /// further than msg keeps: the flush's peak memory grows by far less.
    @Test func aHugeAnswerCostsBoundedMemory() throws {
        let s = try Sandbox()
        let server = try Receiver(s)
        let env = try plugins()
        func peak(_ path: String) throws -> (Int, String) {
            let r = try s.sh("""
                msg compose --to a@example.com --body x --enqueue > /dev/null
                /usr/bin/time -f %M -o rss msg flush --transport '\(server.base)/\(path)' > /dev/null; echo $?
                tail -n 1 rss; msg queue ls --format csv | tail -n +2 | cut -d, -f1 | msg queue rm > /dev/null
                """, env: env)
            return (Int(r.lines.dropFirst().first ?? "") ?? .max, (r.lines.first ?? "") + " " + r.err)
        }
        let (small, _) = try peak("big/10")
        for path in ["big/100000000", "big/100000000?query.chunked=1", "big/100000000?query.status=500", "big/100000000?query.status=500&query.chunked=1"] {
            let (kib, said) = try peak(path)
            #expect(kib - small < 30_000, "\(path): peak RSS \(kib) KiB against \(small) KiB for a small answer; \(said)")
            #expect(said.hasPrefix(path.contains("500") ? "75" : "0"), "\(path): \(said)")
        }
    }

    /// CR LF is looked for as bytes: in a `content_type=` parameter it is a
    /// configuration error (78), in a message's Content-Type the message is
    /// rejected (dead), and nothing is sent with it.
    @Test func lineBreaksInContentTypesAreFoundAsBytes() throws {
        let s = try Sandbox()
        let server = try Receiver(s)
        let env = try plugins()
        let r = try s.sh("""
            msg compose --to a@example.com --body x --enqueue > /dev/null
            msg flush --transport '\(server.base)/hook?input=body&content_type=text/plain%0D%0AX-Injected:%201' > /dev/null; echo $?
            msg queue ls --format csv | tail -n +2 | cut -d, -f2,3
            msg queue ls --format csv | tail -n +2 | cut -d, -f1 | msg queue rm > /dev/null
            printf '{"to":"a@example.com","body":"x","headers":{"Content-Type":"text/plain\\\\r\\\\nX-Injected: 1"}}\\n' | msg compose --enqueue > /dev/null
            msg flush --transport '\(server.base)/hook?input=body' > /dev/null; echo $?
            msg queue ls --format csv | tail -n +2 | cut -d, -f2,13
            """, env: env)
        #expect(r.lines == ["78", "queued,0", "1", "dead,rejected"], "\(r.out) \(r.err)")
        #expect(try server.requests().isEmpty)
    }

    /// exec: a NUL in `to` or a header would cut the value in the environment:
    /// the message is dead, the command never runs for it. Two headers that make
    /// one variable name: the first wins. A value too large for the environment
    /// (E2BIG) is dead with a reason, not retried.
    @Test func execNeverPassesACutValue() throws {
        let s = try Sandbox()
        _ = try s.file("deliver", """
            #!/bin/sh
            printf '%s|%s|%s\\n' "$MSG_TO" "$MSG_HEADER_X_TO" "$(env | grep -c '^MSG_HEADER_X_TO=')" >> got
            """)
        let big = String(repeating: "a", count: 200_000)
        let drafts = """
            {"to":"bob@example.com\\u0000.evil.org","body":"1"}
            {"to":"carol@example.com","body":"2","headers":{"X-Note":"ok\\u0000cut"}}
            {"to":"dave@example.com","body":"3","headers":{"X-To":"first","x_to":"second"}}
            {"to":"erin@example.com","body":"4","headers":{"X-Big":"\(big)"}}

            """
        let r = try s.sh("""
            chmod +x deliver
            msg compose --enqueue > /dev/null
            msg flush --transport "exec:$PWD/deliver" > /dev/null < /dev/null; echo $?
            cat got
            msg queue ls --format csv < /dev/null | tail -n +2 | cut -d, -f2,4,13 | cut -c1-40
            """, stdin: drafts)
        #expect(r.lines.first == "1", "\(r.out) \(r.err)")
        #expect(Array(r.lines.dropFirst().prefix(1)) == ["dave@example.com|first|1"], "only the clean message ran, with the first header: \(r.out)")
        let rows = Array(r.lines.dropFirst(2))
        #expect(rows.count == 4 && rows[2] == "sent,dave@example.com,", "\(rows)")
        #expect(rows[0].hasPrefix("dead,") && rows[1].hasPrefix("dead,") && rows[3].hasPrefix("dead,"), "\(rows)")
        let errors = try s.sh("msg queue ls --status dead --format ndjson").out
        #expect(errors.contains("NUL") && errors.contains("E2BIG"), "the reasons are said: \(errors)")
    }

    /// exec: commands that leave an orphan each, eight at once under steady load
    /// (the workers' runs always overlap) for about 10 s: the zombies msg has at any
    /// moment stay few. They grew by about 40 a second before, reaped only when no
    /// command ran.
    @Test func orphansAreReapedUnderSteadyLoad() throws {
        let s = try Sandbox()
        _ = try s.file("orphan", "#!/bin/sh\n(sleep 0.02 &)\nsleep 0.03\nexit 0\n")
        let r = try s.sh("""
            chmod +x orphan
            seq 1 2400 | awk '{printf "{\\"to\\":\\"u%d\\",\\"body\\":\\"%d\\"}\\n", $1 % 200, $1}' | msg compose --enqueue > /dev/null
            msg flush --watch --concurrency 8 --transport "exec:$PWD/orphan" > /dev/null 2> err & pid=$!
            most=0
            for i in $(seq 1 20); do
                sleep 0.5
                z=$(ps --ppid $pid -o stat= | grep -c '^Z')
                [ "$z" -gt "$most" ] && most=$z
            done
            kill $pid; wait $pid
            echo $most; msg queue count --status sent
            """)
        let most = Int(r.lines.first ?? "") ?? .max
        #expect(most <= 100, "at most \(most) zombies at once; \(r.err)")
        #expect(r.lines.last.flatMap { Int($0) } ?? 0 >= 500, "the load went out: \(r.out)")
    }

    /// Tables: no row ends in blanks, and a destination key holding a line break
    /// or an escape stays on its row, written as `\n`.
    @Test func tablesKeepTheirRowsWhole() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            printf '{"to":"a\\\\nb\\\\u001b[31m","body":"x"}\\n{"to":"c","body":"y"}\\n' | msg compose --enqueue > /dev/null
            msg queue stats --format table > stats; msg queue stats --by destination --format table >> stats
            msg destinations --format table > dest
            grep -c ' $' stats; wc -l < dest; cat dest
            """)
        #expect(r.lines.first == "0", "no trailing blanks: \(r.out)")
        #expect(r.lines.dropFirst().first?.trimmingCharacters(in: .whitespaces) == "3", "a header and two rows: \(r.out)")
        #expect(r.out.contains("a\\nb\\x1b[31m"), "\(r.out)")
    }
}
