import Foundation
import MsgKit
import MsgKitTesting
import Testing

/// The store URLs under test, relative to a sandbox.
let storeKinds = ["sqlite:queue.sqlite", "json:queue.json"]

/// 20,000 records made once and shared by the crash tests.
let twentyThousand: String = {
    let s = try! Sandbox()
    return try! s.sh("""
        seq 20000 | awk '{printf "{\\"to\\":\\"user%d@example.com\\",\\"body\\":\\"crash test message %d\\"}\\n", $1, $1}' | msg compose
        """).out
}()

@Suite(.timeLimit(.minutes(5))) struct StoreCrashTests {
    /// `queue add` of 20,000 records is killed with SIGKILL after a random number of
    /// echoes; every echoed record must be there after reopening, once.
    @Test(arguments: storeKinds)
    func killedQueueAddLosesNothingItAcknowledged(kind: String) throws {
        let input = twentyThousand
        let inputIds = Set(ids(input))
        #expect(inputIds.count == 20_000)
        var rng = SystemRandomNumberGenerator()
        for round in 0..<20 {
            let s = try Sandbox()
            let url = kind.replacingOccurrences(of: ":", with: ":\(s.home)/")
            let inputPath = try s.file("in.ndjson", input)
            let p = TestProcess()
            p.executableURL = URL(fileURLWithPath: buildDirectory + "/msg")
            p.arguments = ["queue", "add", "--store", url]
            p.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: inputPath))
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            // Kill after a random number of acknowledgements (sometimes at once).
            let killAfter = round == 0 ? 0 : Int.random(in: 0..<20_000, using: &rng)
            var echoed = Data()
            var lines = 0
            while lines < killAfter {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                lines += chunk.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
                echoed += chunk
            }
            kill(p.processIdentifier, SIGKILL)
            echoed += out.fileHandleForReading.readDataToEndOfFile()
            try p.wait()
            // Only complete lines were acknowledged.
            let text = String(decoding: echoed, as: UTF8.self)
            let complete = text.hasSuffix("\n") ? text : String(text[..<(text.lastIndex(of: "\n").map { text.index(after: $0) } ?? text.startIndex)])
            let acknowledged = ids(complete)

            let after = try s.sh("msg queue ls --store '\(url)'")
            // Killed before its first commit, it may have left no store at all: then
            // listing says so, and nothing was acknowledged.
            let none = after.status == 74 && after.err.contains("there is no store at") && acknowledged.isEmpty
            #expect(after.status == 0 || none, "round \(round): store does not open cleanly: \(after.err)")
            let stored = ids(after.out)
            #expect(Set(stored).count == stored.count, "round \(round): duplicates")
            let missing = Set(acknowledged).subtracting(stored)
            #expect(missing.isEmpty, "round \(round), killed after \(killAfter): \(missing.count) acknowledged records lost, e.g. \(missing.prefix(3))")
            #expect(Set(stored).isSubset(of: inputIds), "round \(round): records from nowhere")
            // Its ledger holds what it stored, however the write was cut.
            if !none {
                let verify = try s.sh("msg ledger verify --store '\(url)'")
                #expect(verify.status == 0, "round \(round), killed after \(killAfter): \(verify.err)")
            }
            // The store still takes writes after the crash (checked every fifth round).
            if round % 5 == 0 {
                let again = try s.sh("msg queue add --store '\(url)' < in.ndjson | wc -l; msg queue count --store '\(url)'; msg ledger verify --store '\(url)' > /dev/null; echo $?")
                #expect(again.lines == ["20000", "20000", "0"], "round \(round): \(again.err)")
            }
        }
    }

    /// Four processes add 5,000 records each to one store at the same time.
    @Test(arguments: storeKinds)
    func fourConcurrentWritersEndWithEveryRecordOnce(kind: String) throws {
        let s = try Sandbox()
        let url = kind.replacingOccurrences(of: ":", with: ":\(s.home)/")
        let r = try s.sh("""
            for i in 1 2 3 4; do
              seq 5000 | awk -v w=$i '{printf "{\\"to\\":\\"w%d\\",\\"body\\":\\"%d\\"}\\n", w, $1}' | msg compose > in$i
            done
            for i in 1 2 3 4; do msg queue add --store '\(url)' < in$i > out$i 2> err$i & pids="$pids $!"; done
            status=0; for p in $pids; do wait $p || status=$?; done
            echo "status $status"; cat err1 err2 err3 err4
            msg queue count --store '\(url)'
            cat in1 in2 in3 in4 | msg queue count --store '\(url)'
            msg queue ls --store '\(url)' | cut -c8-43 | sort | uniq -d | wc -l
            cat out1 out2 out3 out4 | wc -l
            """)
        #expect(r.lines == ["status 0", "20000", "20000", "0", "20000"], "\(r.out)\(r.err)")
    }

    /// Eight processes create one new store at the same moment, twenty times: each
    /// opens it cleanly (creating the schema and WAL mode is a race nobody loses).
    /// `queue add` with nothing to add: a command that writes creates the store.
    @Test(arguments: storeKinds)
    func manyProcessesCreatingOneStoreAllSucceed(kind: String) throws {
        let s = try Sandbox()
        let r = try s.sh("""
            fails=0
            for round in $(seq 20); do
              url="\(kind.replacingOccurrences(of: ":", with: ":$PWD/r"))$round"
              pids=""
              for i in 1 2 3 4 5 6 7 8; do msg queue add --store "$url" < /dev/null 2>> err & pids="$pids $!"; done
              for p in $pids; do wait $p || fails=$((fails + 1)); done
            done
            echo "failures $fails"; cat err
            echo "stores $(ls r* | grep -c -v -e -wal -e -shm -e .lock)"
            """)
        #expect(r.lines.first == "failures 0", "\(r.out)")
        #expect(r.lines.last == "stores 20", "\(r.out)")
    }

    /// A full disk, then a read-only one: a clear error, exit 74, nothing stored lost.
    /// Runs in a private mount namespace with a 1 MiB tmpfs.
    @Test(arguments: storeKinds)
    func aFullOrReadOnlyDiskFailsCleanlyAndLosesNothing(kind: String) throws {
        let s = try Sandbox()
        let url = kind.replacingOccurrences(of: ":", with: ":\(s.home)/disk/")
        let r = try s.sh("""
            set -u
            mkdir disk
            mount -t tmpfs -o size=1m tmpfs disk || { echo "cannot mount a tmpfs"; exit 1; }
            acked=0
            for i in $(seq 1 400); do
              msg compose --to x --body "$(head -c 20000 /dev/zero | tr '\\0' "$((i % 10))")" > one
              if msg queue add --store '\(url)' < one >> acked.ndjson 2> err; then acked=$((acked + 1)); else echo "add failed with $?"; break; fi
            done
            head -c 300 err; echo
            echo "acked $acked"
            rm -f disk/filler; head -c 600000 /dev/zero > filler 2>/dev/null
            mount -o remount,ro disk
            msg queue add --store '\(url)' < one > /dev/null 2> err2; echo "readonly add $?"
            head -c 300 err2; echo
            mount -o remount,rw disk
            echo "count $(msg queue count --store '\(url)')"
            echo "acked ids stored: $(msg queue count --store '\(url)' < acked.ndjson)"
            """, env: [:], wrapper: "unshare -rm")
        let lines = r.lines
        #expect(lines.first == "add failed with 74", "\(r.out)\(r.err)")
        #expect(lines.count > 1 && lines[1].hasPrefix("msg: ") && !lines[1].contains("\n"))
        // Named as the system names it, never SQLite's "disk I/O error".
        #expect(lines.count > 1 && lines[1].lowercased().contains("no space left on device"), "\(lines)")
        let acked = Int(lines.first { $0.hasPrefix("acked ") }?.dropFirst(6) ?? "") ?? -1
        #expect(acked > 10, "the disk held some records first: \(lines)")
        #expect(lines.contains("readonly add 74"), "\(lines)")
        #expect(lines.contains("count \(acked)"), "\(lines)")
        #expect(lines.contains("acked ids stored: \(acked)"), "\(lines)")
    }
}

@Suite(.timeLimit(.minutes(5))) struct SchemaMigrationTests {
    /// A schema 3 store of 200,000 records, a quarter dead (schema 7 without its
    /// counts, its counts by age, its change floors and hints and `messages_parked`, the dead
    /// put back among the open ones and the version set back), is brought to 7 by the
    /// first command that writes; that command is killed with SIGKILL at random
    /// moments of the migration. The store is always schema 3 or 10, whole, with every
    /// record; its dead are out of the open ones (and in their own index) exactly when it is 10,
    /// and then it counts them (`queue count --status dead` and `queue stats` read
    /// the counts), and its ledger begins with every record stored before it.
    @Test func aKilledMigrationLeavesSchema3Or10AndLosesNothing() throws {
        let s = try Sandbox()
        let n = 200_000
        let made = try s.sh("""
            seq \(n) | awk '{printf "{\\"to\\":\\"user%d@example.com\\",\\"body\\":\\"migration %d\\"}\\n", $1 % 5000, $1}' \
              | msg compose | awk 'NR % 4 == 0 { sub(/"status":"queued"/, "\\"status\\":\\"dead\\"") } { print }' \
              | msg queue add --store sqlite:\(s.home)/v3.sqlite > /dev/null \
            && sqlite3 \(s.home)/v3.sqlite "DROP TABLE commits; DROP TABLE kept; DROP TABLE payloads; ALTER TABLE messages DROP COLUMN content_len; DROP TABLE ledger_removed; ALTER TABLE messages DROP COLUMN ledger; ALTER TABLE messages DROP COLUMN history_n; ALTER TABLE messages DROP COLUMN content_fp; DROP INDEX messages_parked; UPDATE messages SET open = 1 WHERE status = 'dead'; PRAGMA user_version = 3; PRAGMA wal_checkpoint(TRUNCATE)"
            """)
        #expect(made.status == 0, "\(made.err)")
        // How long one whole migration takes here: the kills fall inside it.
        let whole = try s.sh("cp \(s.home)/v3.sqlite \(s.home)/timed.sqlite && msg recover --store sqlite:\(s.home)/timed.sqlite")
        #expect(whole.status == 0, "\(whole.err)")
        let start = Date()
        _ = try s.sh("cp \(s.home)/v3.sqlite \(s.home)/timed2.sqlite && msg recover --store sqlite:\(s.home)/timed2.sqlite")
        let span = max(0.02, Date().timeIntervalSince(start))
        var versions: Set<String> = []
        for round in 0..<12 {
            let path = "\(s.home)/r\(round).sqlite"
            #expect(try s.sh("cp \(s.home)/v3.sqlite \(path)").status == 0)
            let p = TestProcess()
            p.executableURL = URL(fileURLWithPath: buildDirectory + "/msg")
            p.arguments = ["recover", "--store", "sqlite:\(path)"]
            p.standardInput = FileHandle.nullDevice
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            usleep(useconds_t(Double(round) / 12 * span * 1_000_000))
            kill(p.processIdentifier, SIGKILL)
            try p.wait()
            let version = try s.sh("sqlite3 \(path) 'PRAGMA user_version'").out.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(version == "3" || version == "10", "round \(round): schema \(version)")
            versions.insert(version)
            let check = try s.sh("sqlite3 \(path) 'PRAGMA integrity_check'").out.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(check == "ok", "round \(round): \(check)")
            let open = try s.sh("""
                sqlite3 \(path) "SELECT count(*) FROM messages WHERE status = 'dead' AND open IS NOT NULL; \
                    SELECT count(*) FROM sqlite_master WHERE name = 'messages_parked'"
                """).lines
            #expect(open == (version == "10" ? ["0", "1"] : ["\(n / 4)", "0"]), "round \(round): the dead and their index go with the version")
            // The next command that writes finishes the migration; every record is there.
            let count = try s.sh("""
                msg recover --store sqlite:\(path) && msg queue count --store sqlite:\(path) \
                  && msg queue count --status dead --store sqlite:\(path) && msg queue count --status queued --store sqlite:\(path)
                """)
            #expect(count.status == 0, "round \(round): \(count.err)")
            #expect(count.lines == ["\(n)", "\(n / 4)", "\(n - n / 4)"], "round \(round): \(count.out)")
            if round % 4 == 0 {
                // Counted by age too: all made minutes ago at most.
                let stats = try s.sh("msg queue stats --format csv --store sqlite:\(path) | tr -d '\\r'")
                #expect(stats.lines.dropFirst() == ["queued,\(n - n / 4),\(n - n / 4),0,0,0,0", "dead,\(n / 4),\(n / 4),0,0,0,0"], "round \(round): \(stats.out)")
                // The ledger began with all of them, covered from their next change.
                let verify = try s.sh("msg ledger verify --store sqlite:\(path)")
                #expect(verify.status == 0 && verify.out.contains(#""size":1,"#) && verify.out.contains(#""before_ledger":\#(n),"#),
                        "round \(round): \(verify.out) \(verify.err)")
            }
        }
        #expect(versions.contains("3"), "some kill fell before the migration's commit")
    }
}
