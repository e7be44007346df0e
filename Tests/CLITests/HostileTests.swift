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
            msg queue ls; echo "default $?"
            ls | grep -c queue.sqlite
            """)
        #expect(r.lines == ["count 78", "add 78", "my notes", "1", "typo 74", "export 74", "default 74", "0"], "\(r.out)\(r.err)")
        #expect(r.err.contains("msg: notes.txt is not a SQLite database, so it is not a msg store; msg left it as it is"), "\(r.err)")
        #expect(r.err.contains("msg: there is no store at typo/path/q.db: nothing has been queued there yet"), "\(r.err)")
        #expect(r.err.split(separator: "\n").allSatisfy { $0.hasPrefix("msg: ") })
    }

    /// A damaged store is set aside by the next command that writes; from then on
    /// every command says so, and flush and recover refuse until the file is moved.
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
        #expect(r.lines == ["look 74", "0", "write 74", "after 74", "compose 0", "1", "count 0", "flush 74", "recover 74", "flush 0"],
                "\(r.out)\(r.err)")
        let err = r.err.split(separator: "\n").map(String.init)
        #expect(err.allSatisfy { $0.hasPrefix("msg: ") }, "\(r.err)")
        #expect(err.contains { $0.contains("is damaged") && $0.contains("the next msg command that writes to it will set it aside") })
        #expect(err.contains { $0.contains("moved to \(s.home)/queue.sqlite.corrupt-2") }, "a readable time: \(r.err)")
        #expect(err.contains { $0.contains("there is no store at") && $0.contains("set aside as") })
        let warnings = err.filter { $0.contains("started afresh when it was found damaged") }
        #expect(warnings.count == 4, "compose, count, flush, recover say so: \(r.err)")
        #expect(err.filter { $0.contains("not sending or recovering while the damaged store file is beside") }.count == 2)
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
            // Damaged while sending: recover sets it aside too, and stops for nothing.
            let recovered = try s.sh("""
                sqlite3 queue.sqlite "UPDATE messages SET status = 'sending', record = '{x' WHERE recipient = 'u3'"
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
            cat victim; test -e created && echo "created"
            test -L audit.ndjson || grep -c '"status":"dead"' audit.ndjson
            ls outbox/new | wc -l
            """)
        #expect(r.lines == ["flush 0", "export 0", "keep me", "1", "1"], "\(r.out)\(r.err)")
    }
}
