#if canImport(Glibc)
import Glibc
#endif
import MsgKit
import MsgSupport
import MsgKitTesting
import Testing

/// The `exec:` transport against real commands (/bin/sh scripts written by the test).
@Suite struct ExecTransportTests {
    /// Writes an executable shell script into `dir` and returns its path.
    func script(_ dir: String, _ name: String, _ body: String) throws -> String {
        let path = "\(dir)/\(name)"
        let fd = try SystemCalls.open(path, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o755, code: .storeIO)
        try SystemCalls.writeAll(fd, Array("#!/bin/sh\n\(body)\n".utf8), code: .storeIO, what: path)
        close(fd)
        return path
    }

    /// A destination that keeps one file per id (`noclobber`: a second delivery of
    /// an id is a no-op) and counts arrivals in `arrivals`.
    func spool(_ dir: String) throws -> (deliver: String, lookup: String) {
        let deliver = try script(dir, "deliver", """
            cat > "\(dir)/in.$$" || exit 75
            echo "$MSG_ID" >> "\(dir)/arrivals"
            mv -n "\(dir)/in.$$" "\(dir)/spool.$MSG_ID" 2>/dev/null
            rm -f "\(dir)/in.$$"
            """)
        let lookup = try script(dir, "lookup", "test -e \"\(dir)/spool.$MSG_ID\"")
        return (deliver, lookup)
    }

    func spooled(_ dir: String) -> [String: Int] {
        var seen: [String: Int] = [:]
        for name in listDirectory(dir) where name.hasPrefix("spool.") { seen[String(name.dropFirst(6)), default: 0] += 1 }
        return seen
    }

    @Test func passesTransportConformance() throws {
        let faultsDir = temporaryDirectory()
        let failing: (MsgError.Code) throws -> (any Transport)? = { code in
            let status: Int
            switch code {
            case .remote: status = 75
            case .unreachable: status = 69
            case .rejected: status = 65
            case .timeout: return try loader.openTransport("exec:/bin/sleep 10?grace=100ms")
            default: return nil  // a command cannot say rate_limited
            }
            return try loader.openTransport("exec:\(try script(faultsDir, "exit\(status)", "exit \(status)"))")
        }
        try TransportConformance.run(faults: TransportFaults(failing: failing, slow: { _ in
            try loader.openTransport("exec:/bin/sleep 10?grace=100ms")
        })) {
            let dir = temporaryDirectory()
            let (deliver, lookup) = try spool(dir)
            let url = "exec:\(deliver)?lookup=\(lookup)"
            return TransportUnderTest(transport: try loader.openTransport(url), deliveries: { spooled(dir) },
                                      reopen: { try loader.openTransport(url) })
        }
    }

    @Test func theRecordOrItsBodyIsTheInputAndTheMessageIsInTheEnvironment() throws {
        let dir = temporaryDirectory()
        let show = try script(dir, "show", """
            { printf 'id=%s to=%s from=%s attempt=%s type=%s odd=%s\\n' "$MSG_ID" "$MSG_TO" "$MSG_FROM" "$MSG_ATTEMPT" \
                "$MSG_HEADER_CONTENT_TYPE" "$MSG_HEADER_X_2_WEIRD_NAME_"; cat; } > "\(dir)/out.$MSG_ID"
            """)
        var m = Fixtures.message(1)
        m.from = "alice"
        m.attempts = 2
        m.headers = [("Content-Type", "text/plain"), ("x-2 weird.name!", "v")]
        let sending = EncodedMessage(m)
        #expect(try loader.openTransport("exec:\(show)").deliver([sending], deadline: .seconds(5)) == [.delivered(confirmed: false)])
        let record = String(decoding: try readFile("\(dir)/out.\(m.id)"), as: UTF8.self)
        #expect(record == "id=\(m.id) to=bob from=alice attempt=3 type=text/plain odd=v\n" + String(decoding: sending.deliveredJSON, as: UTF8.self) + "\n")

        #expect(try loader.openTransport("exec:\(show)?input=body").deliver([sending], deadline: .seconds(5)) == [.delivered(confirmed: false)])
        let body = String(decoding: try readFile("\(dir)/out.\(m.id)"), as: UTF8.self)
        #expect(body == "id=\(m.id) to=bob from=alice attempt=3 type=text/plain odd=v\n" + m.body)
    }

    @Test func exitStatusesAreReadAsSysexits() throws {
        let dir = temporaryDirectory()
        let exits = try script(dir, "exits", """
            echo "  first line of $MSG_TO  " >&2
            echo "second line" >&2
            exit "$MSG_TO"
            """)
        let silent = try script(dir, "silent", "kill -${MSG_TO} $$")
        let transport = try loader.openTransport("exec:\(exits)")
        let cases: [(Int, MsgError.Code?)] = [
            (0, nil), (75, .remote), (71, .remote), (74, .remote), (69, .unreachable), (68, .unreachable),
            (78, .config), (126, .config), (127, .config), (1, .rejected), (65, .rejected), (77, .rejected),
        ]
        let outcomes = transport.deliver(cases.map { Fixtures.message($0.0, to: String($0.0)) }, deadline: .seconds(5))
        for ((status, code), outcome) in zip(cases, outcomes) {
            switch (code, outcome) {
            case (nil, .delivered(confirmed: false)): break
            case (let code?, .failed(let error, nil)):
                #expect(error.code == code, "exit \(status)")
                #expect(error.message == "first line of \(status)", "the first line of standard error is the message")
            default: Issue.record("exit \(status): \(outcome)")
            }
        }
        let killed = try loader.openTransport("exec:\(silent)").deliver([Fixtures.message(1, to: "SEGV")], deadline: .seconds(5))
        #expect(killed == [.failed(MsgError(.remote, ""), retryAfter: nil)])
        if case .failed(let error, _) = killed.first { #expect(error.message == "\(silent) was killed by signal 11") }
    }

    /// A record full of shell syntax reaches the command as data, whatever is done with it.
    @Test func aHostileRecordNeverReachesAShell() throws {
        let dir = temporaryDirectory()
        let canary = "\(dir)/canary"
        let hostile = "x'; touch \(canary); echo '$(touch \(canary))`touch \(canary)`\"; touch \(canary) #"
        let save = try script(dir, "save", "printf '%s' \"$MSG_TO\" > \"\(dir)/to\"; printf '%s' \"$MSG_HEADER_SUBJECT\" > \"\(dir)/subject\"; cat > \"\(dir)/body\"")
        var m = Fixtures.message(1, to: hostile)
        m.body = hostile
        m.headers = [("Subject", hostile)]
        // Through the command line itself, and through a shell the user named.
        for url in ["exec:\(save)?input=body", "exec:/bin/sh -c '\(save)'?input=body"] {
            #expect(try loader.openTransport(url).deliver([m], deadline: .seconds(5)) == [.delivered(confirmed: false)])
            #expect(String(decoding: try readFile("\(dir)/to"), as: UTF8.self) == hostile)
            #expect(String(decoding: try readFile("\(dir)/subject"), as: UTF8.self) == hostile)
            #expect(String(decoding: try readFile("\(dir)/body"), as: UTF8.self) == hostile)
            #expect(!SystemCalls.exists(canary))
        }
    }

    /// Past the deadline the command's whole process group is ended, even a part that
    /// ignores SIGTERM, and nothing of it is left, not even a zombie.
    @Test func theDeadlineEndsTheWholeProcessGroup() throws {
        let dir = temporaryDirectory()
        let stuck = try script(dir, "stuck", """
            echo $$ > "\(dir)/pgid"
            trap '' TERM
            (trap '' TERM; sleep 60) &
            echo "started a child" >&2
            sleep 60
            """)
        let transport = try loader.openTransport("exec:\(stuck)?grace=200ms")
        let started = Timestamp.now().milliseconds
        let outcome = transport.deliver([Fixtures.message(1)], deadline: MsgDuration(milliseconds: 300))
        let took = Timestamp.now().milliseconds - started
        guard case .failed(let error, nil)? = outcome.first else { Issue.record("\(outcome)"); return }
        #expect(error.code == .timeout)
        #expect(error.message == "\(stuck) did not finish within 300ms; its process group was killed; it said: started a child")
        #expect(took < 5000)
        let pgid = String(decoding: try readFile("\(dir)/pgid"), as: UTF8.self).trimmingBlanksAndNewlines
        let left = try run("ps -e -o pgid=,stat=,pid= | awk '$1 == \(pgid)'")
        #expect(left.isEmpty, "processes left in the group: \(left)")
    }

    /// Four at once, each taking a different time: outcomes come back in the order
    /// given, each the outcome of its own message, and four really ran at once.
    @Test func concurrencyKeepsTheOrderOfOutcomes() throws {
        let dir = temporaryDirectory()
        let work = try script(dir, "work", """
            n=${MSG_TO#n}
            mkdir "\(dir)/running.$n"
            sleep 0.$(( (n * 7) % 5 ))
            # Another command may remove its directory between the glob and ls: not an error of this one.
            echo "$(ls -d "\(dir)"/running.* 2>/dev/null | wc -l)" >> "\(dir)/at-once"
            rmdir "\(dir)/running.$n"
            case $(( n % 3 )) in 0) exit 0;; 1) echo "busy $n" >&2; exit 75;; *) echo "no $n" >&2; exit 65;; esac
            """)
        let transport = try loader.openTransport("exec:\(work)?concurrency=4")
        let messages = (0..<12).map { Fixtures.message($0, to: "n\($0)") }
        let outcomes = transport.deliver(messages, deadline: .seconds(20))
        #expect(outcomes.count == 12)
        for (n, outcome) in outcomes.enumerated() {
            switch n % 3 {
            case 0: #expect(outcome == .delivered(confirmed: false), "message \(n)")
            case 1: #expect(outcome == .failed(MsgError(.remote, "busy \(n)"), retryAfter: nil), "message \(n)")
            default: #expect(outcome == .failed(MsgError(.rejected, "no \(n)"), retryAfter: nil), "message \(n)")
            }
            if case .failed(let error, _) = outcome { #expect(error.message.hasSuffix(" \(n)")) }
        }
        let atOnce = String(decoding: try readFile("\(dir)/at-once"), as: UTF8.self).split(separator: "\n").compactMap { Int($0.trimmingBlanksAndNewlines) }
        #expect(atOnce.max() == 4, "most commands seen running at once: \(atOnce)")
    }

    @Test func aCommandThatCannotRunIsAConfigurationError() throws {
        #expect(throws: MsgError(.config, "")) { try loader.openTransport("exec:no-such-command-anywhere --flag") }
        #expect(throws: MsgError(.config, "")) { try loader.openTransport("exec:/nonexistent/sendmail") }
        #expect(throws: MsgError(.config, "")) { try loader.openTransport("exec:") }
        #expect(throws: MsgError(.config, "")) { try loader.openTransport("exec:/bin/true 'unclosed") }
        #expect(throws: MsgError(.config, "")) { try loader.openTransport("exec:/bin/true?concurrency=0") }
        #expect(throws: MsgError(.config, "")) { try loader.openTransport("exec:/bin/true?input=headers") }
        #expect(throws: MsgError(.config, "")) { try loader.openTransport("exec:/bin/true?lookup=/nonexistent") }
        #expect(throws: MsgError(.config, "")) { try loader.openTransport("exec:/bin/true?colour=red") }
        do {
            _ = try loader.openTransport("exec:sendmial -i")
        } catch {
            #expect(error.message.hasPrefix("exec: cannot run sendmial: not found in PATH"))
        }
    }

    @Test func lookupAnswersFromItsCommandsExitStatus() throws {
        let dir = temporaryDirectory()
        let ask = try script(dir, "ask", "case $MSG_ID in *1) exit 0;; *2) exit 1;; *) exit 3;; esac")
        let transport = try loader.openTransport("exec:/bin/true?lookup=\(ask)")
        let ids = [1, 2, 3].map { Fixtures.message($0).id }
        #expect(try transport.lookup(ids) == [true, false, nil])
        #expect(try loader.openTransport("exec:/bin/true").lookup(ids) == [nil, nil, nil])
    }
}

/// What `command`, run by /bin/sh, printed on standard output and error.
func run(_ command: String) throws -> String {
    try TestProcess.sh(command).text
}

extension String {
    var trimmingBlanksAndNewlines: String {
        String(self.drop(while: { $0.isWhitespace }).reversed().drop(while: { $0.isWhitespace }).reversed())
    }
}
extension Substring {
    var trimmingBlanksAndNewlines: String { String(self).trimmingBlanksAndNewlines }
}
