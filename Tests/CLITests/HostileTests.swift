import Foundation
import MsgKit
import Testing

/// What a careless user or an attacker does to msg's files, through the real binary.
@Suite(.timeLimit(.minutes(3))) struct HostileTests {
    @Test func aStorePathThatIsNoStoreIsLeftAsItIsAndNeverCreated() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            echo 'my notes' > notes.txt
            msg queue count --store sqlite:notes.txt; echo "count $?"
            msg queue add --store sqlite:notes.txt < /dev/null; echo "add $?"
            cat notes.txt; ls | grep -c notes
            msg queue count --store sqlite:typo/path/q.db; echo "typo $?"
            msg export --store json:typo/q.json; echo "export $?"
            test -e typo && echo "typo exists"
            msg queue ls; echo "default $?"   # the default store before anything was queued: empty
            ls | grep -c queue.sqlite
            """)
        #expect(r.lines == ["count 78", "add 78", "my notes", "1", "typo 74", "export 74", "default 0", "0"], "\(r.out)\(r.err)")
        #expect(r.err.contains("msg: notes.txt is not a SQLite database, so it is not a msg store; msg left it as it is"), "\(r.err)")
        #expect(r.err.contains("msg: there is no store at typo/path/q.db: nothing has been queued there yet"), "\(r.err)")
        #expect(r.err.split(separator: "\n").allSatisfy { $0.hasPrefix("msg: ") })
    }

    /// A damaged store is set aside by the next command that writes, and what still
    /// reads of it is carried into a new store; from then on every command says so,
    /// and flush and recover refuse until the file is moved.
    @Test func aStoreSetAsideIsLoudUntilTheUserMovesItAway() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            seq 2000 | awk '{printf "{\\"to\\":\\"u%d\\",\\"body\\":\\"b\\"}\\n", $1}' | msg compose --enqueue > /dev/null
            truncate -s $(( $(stat -c %s queue.sqlite) / 2 )) queue.sqlite
            msg queue count; echo "look $?"
            ls | grep -c corrupt
            msg queue add < /dev/null; echo "write $?"
            msg queue count; echo "after $?"
            msg compose --to bob --body new --enqueue > /dev/null; echo "compose $?"
            msg queue count; echo "count $?"
            msg flush; echo "flush $?"
            msg recover; echo "recover $?"
            mkdir kept && mv queue.sqlite.corrupt-* kept/
            msg flush > /dev/null; echo "flush $?"
            """)
        let lines = r.lines
        #expect(lines.count == 11, "\(r.out)\(r.err)")
        guard lines.count == 11 else { return }
        let carried = Int(lines[3]) ?? -1
        #expect(Array(lines[0..<3]) == ["look 74", "0", "write 74"] && lines[4] == "after 0", "\(r.out)\(r.err)")
        #expect((1..<2000).contains(carried), "the half that still reads was carried over: \(carried)")
        let err = r.err.split(separator: "\n").map(String.init)
        // Where the cut falls, a record carried over may be damaged: the flush then
        // sets it aside as dead and says so (exit 1, some went dead), and sends the rest.
        let damaged = err.filter { $0.contains("is damaged: it was set aside as dead with its text kept, and not sent") }.count
        #expect(Array(lines[5...]) == ["compose 0", "\(carried + 1)", "count 0", "flush 74", "recover 74", damaged > 0 ? "flush 1" : "flush 0"],
                "\(r.out)\(r.err)")
        #expect(err.allSatisfy { $0.hasPrefix("msg: ") }, "\(r.err)")
        #expect(err.contains { $0.contains("is damaged") && $0.contains("the next msg command that writes to it will check it, set it aside") })
        #expect(err.contains { $0.contains("moved to \(s.home)/queue.sqlite.corrupt-2") && $0.contains("\(carried) records that still read were carried") },
                "a readable time, and what was carried: \(r.err)")
        let warnings = err.filter { $0.contains("was found damaged and set aside as") }
        #expect(warnings.count == 5, "count, compose, count, flush, recover say so: \(r.err)")
        #expect(err.filter { $0.contains("set aside as") && $0.contains("not sending or recovering until") }.count == 2, "flush and recover in one line")
    }

    /// Large records (their content kept apart from their row, docs/DESIGN.md 6)
    /// carried out of a damaged store read whole, or, where the damage took their
    /// content, as damaged records with their id: never as other text, and never as
    /// a line that is not JSON (a page cut short reads as zeros: content with NULs
    /// before a rest still shaped as msg writes it).
    @Test func largeRecordsCarriedOutOfADamagedStoreReadWholeOrAsDamaged() throws {
        let s = try Sandbox()
        // Cut at six places two thirds in, each in the middle of another page, so
        // some cut falls in a page of contents.
        let r = try s.sh("""
            seq 1200 | awk '{ b = sprintf("%01500d", $1); printf "{\\"to\\":\\"u%d\\",\\"body\\":\\"%s\\"}\\n", $1, b }' | msg compose --enqueue > /dev/null
            sqlite3 queue.sqlite 'SELECT count(*) FROM payloads'
            mkdir healthy && cp queue.sqlite healthy/
            for k in 0 1 2 3 4 5; do
              rm -f queue.sqlite*; cp healthy/queue.sqlite .
              truncate -s $(( $(stat -c %s queue.sqlite) * 2 / 3 / 16384 * 16384 + k * 16384 + 8000 )) queue.sqlite
              msg queue add < /dev/null 2> /dev/null; echo "write $?"
              msg queue ls --format ndjson 2> /dev/null >> listed; echo "ls $?"
            done
            python3 -c '
            import json, sys
            whole = damaged = wrong = 0
            for line in open("listed"):
                try: r = json.loads(line)
                except ValueError: wrong += 1; continue
                if r.get("last_error", {}).get("code") == "corrupt": damaged += 1
                elif r["body"] == "%01500d" % int(r["to"][1:]): whole += 1
                else: wrong += 1
            print(whole, damaged, wrong)'
            """)
        #expect(Array(r.lines.prefix(13)) == ["1200"] + Array(repeating: ["write 74", "ls 0"], count: 6).flatMap { $0 }, "\(r.out)\(r.err)")
        let figures = (r.lines.last ?? "").split(separator: " ").compactMap { Int($0) }
        #expect(figures.count == 3 && figures[0] > 0 && figures[1] > 0 && figures[2] == 0, "whole, damaged, other text: \(r.out)\(r.err)")
    }

    /// The damaged-store rule (msg-record(5), DAMAGED STORES) through the binary,
    /// for both stores and damage near the start, the middle and the end of a
    /// store of 60,000: a reader refuses it, a writer then sets it aside without
    /// acknowledging anything, and every record a command acknowledged afterwards
    /// is one the next command sees. The same when a writer comes first.
    @Test(arguments: ["sqlite", "json"]) func aDamagedStoreNeverTakesRecordsOutOfSight(store: String) throws {
        let s = try Sandbox()
        let url = store == "sqlite" ? "sqlite:q.sqlite" : "json:q.json?max_records=100000"
        let file = store == "sqlite" ? "q.sqlite" : "q.json"
        let made = try s.sh("""
            export MSG_STORE='\(url)'
            seq 60000 | awk '{printf "{\\"to\\":\\"u%d\\",\\"body\\":\\"message %d with some text\\"}\\n", $1 % 50, $1}' | msg compose --enqueue | wc -l
            mkdir healthy; cp \(file) healthy/
            """)
        #expect(made.lines == ["60000"], "\(made.err)")
        // In a SQLite store, from the first page of the records' table there: the
        // ledger's runs are spread among the records, and only `msg ledger verify`
        // reads them (LedgerTests carry a salvaged store).
        for (where_, offset) in [("start", "size / 10"), ("middle", "size / 2"), ("end", "size - size / 10")] {
            for readerFirst in [true, false] {
                let r = try s.sh("""
                    export MSG_STORE='\(url)'
                    rm -f \(file)*; cp healthy/\(file) .
                    size=$(stat -c %s \(file))
                    at=$((\(offset)))
                    \(store == "sqlite" ? "at=$(sqlite3 \(file) \"SELECT coalesce(min(pageno) - 1, $at / 16384) * 16384 FROM dbstat WHERE pageno > $at / 16384 AND name = 'messages'\")" : "")
                    head -c 204800 /dev/urandom | dd of=\(file) bs=1 seek=$at conv=notrunc status=none
                    \(readerFirst ? "msg queue ls > /dev/null; echo \"ls $?\"; msg queue count > /dev/null; echo \"count $?\"" : "")
                    printf '{"to":"a","body":"x"}\\n{"to":"b","body":"y"}\\n' | msg compose --enqueue > acked; echo "enqueue $?"
                    n=$(msg queue count 2> /dev/null); echo "then $?"
                    printf '{"to":"c","body":"z"}\\n' | msg compose --enqueue >> acked 2> /dev/null; echo "again $?"
                    # A listing that meets damage no command met before says so (74) and
                    # leaves its report: the next writer sets the file aside, carrying
                    # what reads, and the listing after it sees every acknowledged record.
                    msg queue ls > raw 2> /dev/null; status=$?
                    if [ $status -eq 74 ]; then echo '{"to":"d","body":"w"}' | msg compose --enqueue >> acked 2> /dev/null; msg queue ls > raw 2> /dev/null; status=$?; fi
                    cut -c8-43 raw | sort > listed; echo "listed $status"
                    cut -c8-43 acked | sort | comm -23 - listed | wc -l
                    msg flush --transport stdout: > /dev/null 2> flush.err; echo "flush $?"; grep -c . flush.err
                    """)
                let tag = "\(store), damage at the \(where_), \(readerFirst ? "reader" : "writer") first"
                if readerFirst {
                    // `ls` reads every record, so it meets the damage. `count` may be
                    // answered from an index the random bytes missed (SQLite counts
                    // the smallest b-tree), which is a true count, not a hidden record.
                    #expect(Array(r.lines.prefix(1)) == ["ls 74"] && Array(r.lines.dropFirst(2).prefix(1)) == ["enqueue 74"], "\(tag): \(r.out)\(r.err)")
                    #expect(["count 74", "count 0"].contains(r.lines.dropFirst().first ?? ""), "\(tag): \(r.out)\(r.err)")
                } else {
                    #expect(["enqueue 74", "enqueue 0"].contains(r.lines.first ?? ""), "\(tag): \(r.out)\(r.err)")
                }
                // Whatever was acknowledged is listed by the next commands, and a
                // command that cannot see the store says so instead of listing less.
                let tail = Array(r.lines.suffix(4))
                #expect(tail.first == "listed 0" && tail.dropFirst().first == "0", "\(tag): acknowledged but not listed: \(r.out)\(r.err)")
                #expect(tail.dropFirst(2).first == "flush 74" && tail.last == "1", "\(tag): flush refuses in one line: \(r.out)\(r.err)")
            }
        }
    }

    /// A record edited by hand into something that is no record stops nothing: every
    /// listing still prints valid lines, flush sends the others, and the damaged one
    /// becomes dead with its text kept, on every store (msg-record(5), DAMAGED RECORDS).
    @Test(arguments: ["sqlite", "json"]) func aDamagedRecordIsSetAsideAndTheRestFlows(store: String) throws {
        let s = try Sandbox()
        let damage = store == "sqlite"
            ? #"sqlite3 queue.sqlite "UPDATE messages SET record = '{broken' WHERE recipient = 'u2'""#
            : #"sed -i 's/"to":"u2","body":"b2"/"to":"u2","body":2/' q.json"#
        let setUp = try s.sh("""
            export MSG_STORE=\(store == "sqlite" ? "sqlite:queue.sqlite" : "json:q.json")
            for n in 1 2 3; do msg compose --to u$n --body b$n; done | msg queue add > /dev/null
            \(damage)
            msg queue stats > /dev/null; echo "stats $?"
            msg queue ls > listed; echo "ls $?"
            """)
        #expect(setUp.lines == ["stats 0", "ls 0"], "\(setUp.out)\(setUp.err)")
        let listed = try records(String(contentsOfFile: s.home + "/listed", encoding: .utf8))
        #expect(listed.map(\.to) == ["u1", "u2", "u3"] && listed[1].isDamaged, "every line a record")
        let damagedID = listed[1].id
        let r = try s.sh("""
            export MSG_STORE=\(store == "sqlite" ? "sqlite:queue.sqlite" : "json:q.json")
            msg flush --transport file:out > flushed; echo "flush $?"
            ls out/new | wc -l
            ls | grep -c -e corrupt -e torn
            msg queue show \(damagedID)
            msg retry --dead \(damagedID); echo "redrive $?"
            msg queue edit \(damagedID) --body fixed; echo "edit $?"
            msg queue rm \(damagedID) > /dev/null; echo "rm $?"
            msg queue count
            """)
        #expect(Array(r.lines.prefix(3)) == ["flush \(store == "sqlite" ? 1 : 0)", "2", "0"], "\(r.out)\(r.err)")
        #expect(Array(r.lines.suffix(4)) == ["redrive 65", "edit 65", "rm 0", "2"], "\(r.out)\(r.err)")
        let shown = try #require(try records(r.lines[3]).first)
        #expect(shown.status == .dead && shown.lastError?.code == "corrupt" && shown.isDamaged)
        let kept = shown.extra.first { $0.key == Message.damagedRecordKey }?.value.stringValue ?? ""
        #expect(store == "sqlite" ? kept == "{broken" : kept.contains(#""to":"u2","body":2"#), "the text is kept whole: \(kept)")
        if store == "sqlite" {
            #expect(r.err.contains("msg: record \(damagedID) in sqlite:queue.sqlite is damaged"), "flush says so: \(r.err)")
        }
        let flushed = try records(String(contentsOfFile: s.home + "/flushed", encoding: .utf8))
        #expect(flushed.map(\.to) == ["u1", "u3"] && flushed.allSatisfy { $0.status == .sent })
        if store == "sqlite" {
            // Damaged while sending: recover sets it aside too, and stops for nothing. (The
            // edit keeps the columns the store derives for its indexes, as msg writes them.)
            let recovered = try s.sh("""
                sqlite3 queue.sqlite "UPDATE messages SET status = 'sending', open = 1, lease_until = 0, record = '{x' WHERE recipient = 'u3'"
                msg recover --stale-after 0s > /dev/null; echo "recover $?"
                msg queue ls --status dead | grep -c damaged_record
                """)
            #expect(recovered.lines == ["recover 0", "1"], "\(recovered.out)\(recovered.err)")
        }
    }

    @Test func linksPlantedWhereMsgWritesAreNotFollowed() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            echo 'keep me' > victim
            id=$(msg compose --to bob --body hi --enqueue | cut -c8-43)
            mkdir -p outbox/tmp outbox/new outbox/cur
            ln -s "$PWD/victim" "outbox/tmp/$id.json"
            ln -s "$PWD/created" "outbox/tmp/x.json"
            msg flush > /dev/null; echo "flush $?"
            # export --out once wrote FILE.tmp-<pid>: links for the next pids.
            msg compose --to c --body dead --enqueue | msg flush --transport 'stdout:?fail=1&error=rejected' > /dev/null
            next=$(sh -c 'echo $$'); for p in $(seq $next $((next + 200))); do ln -s "$PWD/victim" "audit.ndjson.tmp-$p"; done
            ln -s "$PWD/victim" audit.ndjson
            msg export --out audit.ndjson 2> /dev/null; echo "export $?"
            test -L audit.ndjson && rm audit.ndjson
            msg export --out audit.ndjson 2> /dev/null; echo "export $?"
            cat victim; test -e created && echo "created"
            test -L audit.ndjson || grep -c '"status":"dead"' audit.ndjson
            ls outbox/new | wc -l
            """)
        // A link at --out itself is refused (OutputPath); the links planted at the
        // temporary names are never written through.
        #expect(r.lines == ["flush 0", "export 64", "export 0", "keep me", "1", "1"], "\(r.out)\(r.err)")
    }

    /// A JSON store whose last line is a write cut short: the flush that meets it
    /// keeps the bytes aside, cuts them off, says so on one line naming the store,
    /// and sends every whole record.
    @Test func aFlushThatMeetsATornTailSaysSo() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            seq 3 | awk '{printf "{\\"to\\":\\"u%d\\",\\"body\\":\\"b\\"}\\n", $1}' | msg compose --enqueue --store json:q.json > /dev/null
            printf '{"id":"01a20d00-0000-7000-8000-00000000' >> q.json
            msg flush --store json:q.json --transport stdout: 2> err | grep -c '"status":"sent"'; echo "exit ${PIPESTATUS[0]}"
            cat err; ls | grep -c 'q.json.torn-'
            """)
        #expect(r.lines.count == 4 && r.lines[0] == "3" && r.lines[1] == "exit 0" && r.lines[3] == "1", "\(r.out) \(r.err)")
        #expect(r.lines.count > 2 && r.lines[2].hasPrefix("msg: store json:") && r.lines[2].contains("q.json: its last line was a write cut short (39 bytes, never acknowledged); kept in "), "\(r.out)")
    }

    /// A batch of three records in a JSON store, cut by a crash inside its last
    /// line: none of it was acknowledged, so none of it is sent, not even the two
    /// whole records before the cut (msg-record(5), rule 3: a commit is all or
    /// nothing); the flush sets the whole batch aside and says so.
    @Test func aBatchCutShortIsNotSentInPart() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            seq 3 | awk '{printf "{\\"to\\":\\"u%d\\",\\"body\\":\\"b\\"}\\n", $1}' | msg compose --enqueue --store json:q.json > /dev/null
            grep -c '"commit":4,' q.json
            head -c -100 q.json > cut && cat cut > q.json
            msg queue count --store json:q.json
            msg flush --store json:q.json --transport stdout: 2> err | grep -c '"status":"sent"'; echo "exit ${PIPESTATUS[0]}"
            cat err; grep -c '"to":"u' q.json.torn-*
            """)
        #expect(r.lines.count == 6 && Array(r.lines[0...3]) == ["1", "0", "0", "exit 0"] && r.lines[5] == "3", "\(r.out) \(r.err)")
        #expect(r.lines.count > 4 && r.lines[4].hasPrefix("msg: store json:") && r.lines[4].contains("q.json: its last lines were a write cut short ("), "\(r.out)")
    }
}
