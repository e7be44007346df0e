import Foundation
import MsgKit
import Testing

/// What a new operator lost or tripped on (issue 65), through the real binary: one
/// reading of a store URL, readers who may not write, a draft's unknown fields named,
/// bulk mistakes summed up, and a terminal that shows people text, not JSON.
@Suite(.timeLimit(.minutes(3))) struct NewOperatorTests {
    /// `sqlite://NAME/…` (one slash too many) is refused naming the forms meant, and
    /// makes nothing (it once made `/…` at the root); `sqlite:///ABS` is `sqlite:/ABS`;
    /// a store's missing directory is never made, but msg's own home is.
    @Test func aStoreURLHasOneReadingAndNoDirectoryIsMade() throws {
        let s = try Sandbox()
        let name = "msg-test-\(UUID().uuidString.prefix(8))"
        let r = try s.sh("""
            msg compose --to a --body b --enqueue --store 'sqlite://tmp/\(name)/q.sqlite' > /dev/null; echo "host $?"
            msg queue ls --store 'json://tmp/\(name)/q.json' > /dev/null; echo "json host $?"
            msg compose --to a --body b --enqueue --store sqlite:\(s.home)/missing/q.sqlite > /dev/null; echo "missing $?"
            msg compose --to a --body b --enqueue --store json:\(s.home)/missing/q.json > /dev/null; echo "json missing $?"
            msg compose --to a --body b --enqueue --store sqlite://\(s.home)/q.sqlite > /dev/null; echo "three slashes $?"
            msg queue count --store sqlite:\(s.home)/q.sqlite
            MSG_HOME=\(s.home)/fresh/home msg compose --to a --body b --enqueue > /dev/null; echo "home $?"
            ls -d /\(name) missing 2>&1 | wc -l; ls fresh/home
            """)
        #expect(r.lines == ["host 64", "json host 64", "missing 78", "json missing 78", "three slashes 0", "1", "home 0", "2", "queue.sqlite"],
                "\(r.out)\(r.err)")
        #expect(r.err.contains("'sqlite://tmp/\(name)/q.sqlite': a sqlite: file has no host part ('tmp'); write sqlite:/tmp/\(name)/q.sqlite for an absolute path"),
                "\(r.err)")
        #expect(r.err.contains("the directory \(s.home)/missing of store \(s.home)/missing/q.sqlite does not exist"), "\(r.err)")
        #expect(!FileManager.default.fileExists(atPath: "/\(name)"))
    }

    /// `queue ls` and `count` take ids as arguments (whole, or the short id a table
    /// shows), as msg(1) says every command that acts on messages does; `--out`
    /// into a missing directory says how to make it.
    @Test func queueLsTakesIdsAsArguments() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            for n in 1 2 3; do msg compose --to a --body b$n --enqueue; done | cut -c8-43 > ids
            msg queue ls $(sed -n 2p ids) | jq -r .body
            msg queue count $(sed -n 1p ids) $(sed -n 3p ids | cut -c29-)
            msg queue ls 0000000; echo "none $?"
            msg export --out missing/audit.csv; echo "export $?"
            """)
        #expect(r.lines == ["b2", "2", "none 65", "export 64"], "\(r.out)\(r.err)")
        #expect(r.err.contains("--out missing/audit.csv: the directory missing does not exist; make it first (mkdir -p 'missing')"), "\(r.err)")
    }

    /// A user who may read the store but not write it or its directory (an auditor,
    /// a monitoring user) lists, counts, exports, reads metrics and verifies the
    /// ledger, on SQLite (with and without a writer's journal there) and JSON; a
    /// write is refused with 77 (EX_NOPERM) in one line, not 74.
    @Test func aUserWhoCanOnlyReadTheStoreReadsIt() throws {
        let s = try Sandbox()
        let seeded = try s.sh("""
            mkdir stores && for n in 1 2 3; do msg compose --to a --body b$n; done > drafts
            msg queue add --store sqlite:stores/q.sqlite < drafts > /dev/null && msg queue add --store json:stores/q.json < drafts > /dev/null
            chmod 755 . stores && chmod 644 stores/q.sqlite stores/q.json && ls stores
            """)
        #expect(seeded.lines == ["q.json", "q.json.lock", "q.sqlite"], "\(seeded.out)\(seeded.err)")
        // The reader's own key, for a checkpoint it signs and keeps elsewhere.
        let key = try s.sh("mkdir keys && msg ledger keygen --key keys/k > /dev/null 2>&1 && chown -R 65534:65534 keys && head -1 drafts | cut -c8-43")
        #expect(key.status == 0, "\(key.err)")
        let reader = "setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=\(s.home)/nobody MSG_HOME=\(s.home)/nobody"
        func read(_ store: String) throws -> Run {
            try s.sh("""
                for c in 'queue ls' 'queue show \(key.out.trimmingCharacters(in: .whitespacesAndNewlines))' 'queue count' 'queue stats' export metrics destinations 'ledger verify' 'ledger checkpoint --key keys/k'; do
                    msg $c --store \(store) > /dev/null < /dev/null; rc=$?; set -- $c; echo "$1${2:+ $2} $rc"
                done
                msg compose --to a --body x --enqueue --store \(store) > /dev/null; echo "write $?"
                """, wrapper: reader)
        }
        let reads = ["queue ls 0", "queue show 0", "queue count 0", "queue stats 0", "export 0", "metrics 0", "destinations 0", "ledger verify 0",
                     "ledger checkpoint 0"]
        for store in ["sqlite:\(s.home)/stores/q.sqlite", "json:\(s.home)/stores/q.json"] {
            let r = try read(store)
            #expect(r.lines == reads + ["write 77"], "\(store): \(r.out)\(r.err)")
            #expect(r.err.split(separator: "\n").count == 1, "one line: \(r.err)")
        }
        // A writer holding the SQLite store open: its journal is there, and read through.
        let (watch, _, _) = try s.start(["flush", "--watch", "--store", "sqlite:\(s.home)/stores/q.sqlite", "--transport", "stdout:?fd=3"])
        defer { if watch.isRunning { kill(watch.processIdentifier, SIGKILL) } }
        #expect(eventually(within: 10) { FileManager.default.fileExists(atPath: "\(s.home)/stores/q.sqlite-wal") })
        #expect(eventually(within: 10) { (try? s.sh("msg queue count --status sent --store sqlite:stores/q.sqlite").out) == "3\n" })
        let r = try s.sh("msg queue count --status sent --store sqlite:\(s.home)/stores/q.sqlite", wrapper: reader)
        #expect(r.lines == ["3"], "\(r.out)\(r.err)")
        kill(watch.processIdentifier, SIGTERM)
        try watch.wait()
    }

    /// A draft's field msg does not know is named once, with the nearest known one
    /// (`subject` is `headers.Subject`), and kept; `--strict` refuses the draft.
    @Test func anUnknownDraftFieldIsNamedWithTheNearestKnownOne() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            printf '%s\\n' '{"to":"a","body":"b","subject":"Hello"}' '{"to":"a","body":"c","subject":"Again","bdoy":"x"}' | msg compose > out; echo "compose $?"
            wc -l < out
            echo '{"to":"a","body":"b","subject":"Hello"}' | msg compose --strict; echo "strict $?"
            """)
        #expect(r.lines == ["compose 0", "2", "strict 65"], "\(r.out)\(r.err)")
        #expect(r.err.split(separator: "\n") == [
            "msg: unknown field \"subject\" (did you mean \"headers.Subject\"?): kept in the record as it is, not sent as a header; --strict refuses such a draft",
            "msg: unknown field \"bdoy\" (did you mean \"body\"?): kept in the record as it is, not sent as a header; --strict refuses such a draft",
            "msg: line 1: unknown field \"subject\" (did you mean \"headers.Subject\"?)",
        ], "\(r.err)")
    }

    /// A bulk input with one mistake says it ten times, then how many more.
    @Test func aThousandIdenticalErrorsAreTenLinesAndACount() throws {
        let s = try Sandbox()
        let r = try s.sh("for i in $(seq 1000); do echo '{\"to\":\"a\"}'; done | msg compose > /dev/null; echo \"exit $?\"")
        let said = r.err.split(separator: "\n").map(String.init)
        #expect(r.lines == ["exit 65"])
        #expect(said.count == 11, "\(said.count) lines")
        #expect(said.first == "msg: line 1: missing field \"body\"" && said[9] == "msg: line 10: missing field \"body\"", "\(said)")
        #expect(said.last == "msg: 990 more lines had the same problem, the last of them line 1000: missing field \"body\"", "\(said)")
    }

    /// On a terminal `flush` shows what it did in words, no JSON; into a file, records.
    @Test func aFlushToATerminalPrintsNoJSON() throws {
        let s = try Sandbox()
        _ = try s.sh("for n in 1 2 3; do msg compose --to a --body b$n --enqueue; done > /dev/null")
        let terminal = try TerminalSession("cd '\(s.home)' && export MSG_HOME='\(s.home)' XDG_CONFIG_HOME='\(s.home)/config' PATH='\(buildDirectory)':$PATH"
                                           + " && msg flush --transport 'stdout:?fd=3' 3>/dev/null && msg flush")
        let screen = terminal.waitFor("EXITED 0") ?? terminal.screen
        #expect(!screen.contains("{\""), "\(screen)")
        #expect(screen.contains("msg: 3 sent\n") && screen.contains("msg: nothing was due\n"), "\(screen)")
        let piped = try s.sh("msg compose --to a --body b4 --enqueue > /dev/null; msg flush --transport 'stdout:?fd=3' 3>/dev/null | jq -r .body")
        #expect(piped.lines == ["b4"] && piped.err.isEmpty, "\(piped.out)\(piped.err)")
    }

    /// A watch that tried one message again and again counts it once, as what it is
    /// left as, when it stops: not one "deferred" per failed attempt.
    @Test func aWatchsStopSummaryCountsMessagesNotAttempts() throws {
        let s = try Sandbox()
        _ = try s.sh("msg compose --to a --body b --enqueue > /dev/null")
        let (watch, _, err) = try s.start(["flush", "--watch", "--transport", "stdout:?fail=1&fd=3", "--backoff-base", "10ms", "--backoff-cap", "20ms",
                                           "--breaker", "0"])
        defer { if watch.isRunning { kill(watch.processIdentifier, SIGKILL) } }
        let tried = eventually(within: 20) {
            guard let shown = try? records(s.sh("msg queue ls --history").out).first else { return false }
            return shown.history.filter { $0.event == "attempt" }.count >= 3
        }
        #expect(tried)
        kill(watch.processIdentifier, SIGTERM)
        try watch.wait()
        let said = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        // (A stop that finds it claimed for its next attempt adds that it put it back.)
        let last = said.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last == "msg: stopping (SIGTERM): 0 sent, 1 left to retry, 0 dead"
                 || last == "msg: stopping (SIGTERM): 0 sent, 1 left to retry, 0 dead; 1 not attempted were put back untouched", "\(said)")
    }
}
