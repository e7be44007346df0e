import Foundation
import MsgKit
import Testing

@Suite(.timeLimit(.minutes(3))) struct ExitCodeTests {
    @Test func zeroOneSixtyFiveAndSeventyFiveFromRealScenarios() throws {
        let s = try Sandbox()
        _ = try s.sh("msg compose --to a --body ok --enqueue")
        #expect(try s.sh("msg flush").status == 0, "everything sent")
        _ = try s.sh("msg compose --to b --body later --enqueue")
        #expect(try s.sh("msg flush --transport 'stdout:?error=timeout&fail=1'").status == 75, "deferred")
        #expect(try s.sh("msg retry --now --transport 'stdout:?error=rejected&fail=1'").status == 1, "dead")
        #expect(try s.sh("msg queue add", stdin: "garbage\n").status == 65, "bad input")
        #expect(try s.sh("msg flush --transport nosuch:x").status == 69, "unavailable transport")
        #expect(try s.sh("msg flush --config /nonexistent").status == 78, "configuration")
        let states = try records(try s.sh("msg queue ls").out).map(\.status)
        #expect(states == [.sent, .dead])
    }

    @Test func deadMessagesAreRedrivenWithTheirHistory() throws {
        let s = try Sandbox()
        _ = try s.sh("msg compose --to a --body x --enqueue; msg flush --transport 'stdout:?error=rejected&fail=1'")
        let r = try s.sh("msg retry --dead; msg flush > /dev/null; msg queue ls --history")
        let m = try #require(try records(r.out).last)
        #expect(m.status == .sent)
        #expect(m.history.map(\.event) == ["queued", "attempt", "dead", "redriven", "attempt", "sent"])
        #expect(r.err.contains("redrove 1 dead message to queued"))
    }
}

@Suite(.timeLimit(.minutes(3))) struct QueueCommandTests {
    @Test func holdReleaseEditShowAndRemove() throws {
        let s = try Sandbox()
        let ids = try s.sh("for b in one two three; do msg compose --to bob --body $b --enqueue; done").lines.map { String($0.dropFirst(7).prefix(36)) }
        #expect(ids.count == 3)
        let held = try s.sh("msg queue ls --to bob | head -1 | msg queue hold")
        #expect(try records(held.out).map(\.status) == [.held])
        let flushed = try s.sh("msg flush | wc -l; msg queue ls --status held | wc -l")
        #expect(flushed.lines == ["2", "1"], "a held message is not sent")
        #expect(try s.sh("msg queue hold \(ids[1])").status == 65, "a sent message cannot be held")
        _ = try s.sh("msg queue release \(ids[0])")
        let edited = try s.sh("msg queue edit \(ids[0]) --to carol --header x=1 && msg queue show \(ids[0])")
        let m = try #require(try records(edited.lines.last ?? "").first)
        #expect(m.to == "carol" && m.headers.first?.value == "1" && m.history.map(\.event) == ["queued", "held", "released", "edited"])
        #expect(try s.sh("msg queue edit \(ids[1]) --body late").status == 65, "a sent message cannot be edited")
        let removed = try s.sh("msg queue ls --to carol | msg queue rm | wc -l; msg queue count")
        #expect(removed.lines == ["1", "2"])
        let missing = try s.sh("msg queue show \(ids[0])")
        #expect(missing.status == 65 && missing.err == "msg: no message with id \(ids[0])\n")
    }

    @Test func receiptsGoForwardOnly() throws {
        let s = try Sandbox()
        _ = try s.sh("msg compose --to a --body x --enqueue; msg flush")
        let r = try s.sh("msg queue ls | msg queue mark --status read; msg queue ls | msg queue mark --status delivered; echo $?; msg queue ls")
        #expect(try records(r.lines[0]).first?.status == .read)
        #expect(r.lines[1] == "65" && r.err.contains("is read and cannot become delivered"), "\(r.out)\(r.err)")
        #expect(try records(r.lines[2]).first?.status == .read)
    }

    /// A receipt for a message that was never sent would make it look delivered while
    /// it sits in the queue, or is dead: refused, and the message stays as it was.
    @Test func receiptsApplyOnlyToSentMessages() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            msg compose --to a --body queued --enqueue > /dev/null
            msg compose --to b --body failed --enqueue | msg flush --transport 'stdout:?fail=1' > /dev/null
            msg compose --to c --body dead --enqueue | msg flush --transport 'stdout:?fail=1&error=rejected' > /dev/null
            for status in delivered read; do
              msg queue ls | msg queue mark --status $status | wc -l; echo "exit ${PIPESTATUS[1]}"
            done
            msg queue ls | cut -c1-200 | grep -o '"status":"[a-z]*"' | sort | tr '\n' ' '
            """)
        #expect(r.lines == ["0", "exit 65", "0", "exit 65", #""status":"dead" "status":"failed" "status":"queued" "#], "\(r.out)\(r.err)")
        for status in ["queued", "failed", "dead"] {
            #expect(r.err.contains("it is \(status), not sent: a delivered receipt applies only to a message that was sent"), "\(r.err)")
        }
    }

    /// Filters are typed values, parsed once: statuses repeated or comma-separated or
    /// `all`, times as RFC 3339, a date or an age in any unit.
    @Test func filtersTakeRepeatsDatesAndAges() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            msg compose --to a --body 1 --enqueue > /dev/null
            id=$(msg compose --to b --body 2 --enqueue | cut -c8-43)
            msg compose --to c --body 3 --enqueue > /dev/null
            msg queue hold $id > /dev/null
            msg queue count --status queued --status held
            msg queue count --status queued,held --status dead
            msg queue count --status held
            msg queue count --status all
            msg queue count --since 2000-01-01
            msg queue count --since 2999-01-01
            msg queue count --since 1w
            msg queue count --since 3x; echo "bad $?"
            """)
        #expect(r.lines == ["3", "3", "1", "3", "3", "0", "3", "bad 64"], "\(r.out)\(r.err)")
        #expect(r.err.contains("invalid time '3x'"), "\(r.err)")
    }

    /// Ids given to flush or retry that are not theirs to take are named with why,
    /// and when none could be taken the exit is 65.
    @Test func idsNotTakenAreNamedWithWhy() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            a=$(msg compose --to a --body 1 --enqueue | cut -c8-43)
            b=$(msg compose --to b --body 2 --enqueue | cut -c8-43)
            msg flush $a > /dev/null; echo "first $?"
            msg flush $a 01890a5d-ac96-774b-bcce-b302099a8057 > /dev/null; echo "none $?"
            msg flush $a $b > /dev/null; echo "some $?"
            msg retry $b > /dev/null; echo "retry $?"
            echo $a; echo $b
            """)
        let (a, b) = (r.lines.dropLast().last ?? "", r.lines.last ?? "")
        #expect(Array(r.lines.prefix(4)) == ["first 0", "none 65", "some 0", "retry 65"], "\(r.out)\(r.err)")
        #expect(r.err.contains("msg: \(a): it is sent, not queued\n"), "\(r.err)")
        #expect(r.err.contains("msg: 01890a5d-ac96-774b-bcce-b302099a8057: no such message"), "\(r.err)")
        #expect(r.err.contains("msg: \(b): it is sent, not failed"), "\(r.err)")
    }

    /// A table fits the terminal in display cells: a CJK recipient takes two cells a
    /// character and shifts no column; what does not fit is cut with an ellipsis.
    @Test func tablesFitTheTerminalInDisplayCells() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            msg compose --to '山田太郎@example.jp' --body 'こんにちは世界, a long body that goes on and on' --enqueue > /dev/null
            msg compose --to bob --body short --enqueue > /dev/null
            msg flush --transport 'stdout:?fail=1&error=timeout' > /dev/null 2>&1
            COLUMNS=100 msg queue ls --format table
            COLUMNS=100 msg plugins --format table
            """)
        func cells(_ line: String) -> Int {
            line.unicodeScalars.reduce(0) { $0 + ((0x3000...0x9FFF).contains($1.value) ? 2 : 1) }
        }
        let lines = r.lines
        #expect(lines.count >= 5 && lines.allSatisfy { cells($0) <= 100 }, "\(lines.map { "\(cells($0)) \($0)" })")
        // Every row's ERROR cell starts where its header does, counted in cells.
        let header = lines[0]
        let column = cells(String(header[..<header.range(of: "LAST ERROR")!.lowerBound]))
        for row in lines[1...2] {
            let error = row.range(of: "timeout")!
            #expect(cells(String(row[..<error.lowerBound])) == column, "\(row)")
        }
        #expect(lines[1].contains("…") && !lines[1].contains("\n"), "cut, not wrapped: \(lines[1])")
        let shown = try s.sh("msg queue ls | head -1 | cut -c8-43 | xargs msg queue show --format table")
        #expect(shown.lines.first?.hasPrefix("id          ") == true && shown.out.contains("\nlast error  timeout: "), "\(shown.out)")
        #expect(shown.out.contains("\nhistory\n") && shown.out.contains("  attempt   sending"), "\(shown.out)")
    }

    @Test func statsAndPurge() throws {
        let s = try Sandbox()
        _ = try s.sh("for i in 1 2 3; do msg compose --to a --body $i --enqueue; done; msg flush --limit 2 >/dev/null")
        let stats = try s.sh("msg queue stats").lines.map { try JSONParser.parse($0) }
        #expect(stats.map { $0["status"]?.stringValue } == ["queued", "sent"])
        #expect(stats.map { $0["total"]?.intValue } == [1, 2] && stats.map { $0["<5m"]?.intValue } == [1, 2])
        // Every format listed works: csv and json as they say, a table with a total row.
        let formats = try s.sh("msg queue stats --format csv | tr -d '\\r'; msg queue stats --format json; msg queue stats --format table")
        #expect(Array(formats.lines.prefix(3)) == ["status,total,<5m,<1h,<1d,<7d,older", "queued,1,1,0,0,0,0", "sent,2,2,0,0,0,0"], "\(formats.out)")
        #expect(formats.lines[3].hasPrefix("[{\"status\":\"queued\"") && formats.lines[3].hasSuffix("}]"), "\(formats.lines[3])")
        #expect(formats.lines.last?.split(separator: " ").map(String.init) == ["total", "3", "3", "0", "0", "0", "0"], "\(formats.out)")
        let refused = try s.sh("msg export --format table; echo $?; msg queue ls --format table --history; echo $?")
        #expect(refused.lines == ["64", "64"] && refused.err.contains("an export is ndjson, json or csv") && refused.err.contains("--history does not fit in a table"))
        #expect(try s.sh("msg queue purge --status queued --older-than 0s").status == 64, "queued messages are never purged")
        let purged = try s.sh("msg queue purge --status sent --older-than 1h; msg queue count; msg queue purge --status sent --older-than 0s; msg queue count")
        #expect(purged.lines == ["3", "1"] && purged.err.contains("purged 2 messages"))
    }
}

@Suite(.timeLimit(.minutes(3))) struct ExportTests {
    @Test func auditExportIsAtomicAndChecksumsVerify() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            msg compose --to a --body 'secret, "quoted"' --enqueue > /dev/null
            msg compose --to b --body fine --enqueue > /dev/null
            msg flush --transport 'stdout:?fail=1&error=rejected' > /dev/null
            msg export --out audit.csv --format csv --redact body
            sha256sum -c audit.csv.sha256
            ls -l audit.csv | cut -c1-10
            msg export | wc -l
            msg export --status sent | wc -l
            """)
        #expect(r.lines == ["audit.csv: OK", "-rw-------", "2", "0"], "\(r.out)\(r.err)")
        let csv = try String(contentsOfFile: s.home + "/audit.csv", encoding: .utf8)
        #expect(csv.hasPrefix("id,status,attempts,to,from,body,headers,created_at,updated_at,not_before,next_attempt_at,expires_at,last_error_code,last_error_message,history\r\n"))
        #expect(!csv.contains("secret") && csv.contains("[redacted]") && csv.contains("rejected"))
        #expect(csv.components(separatedBy: "\r\n").count == 4, "header, two rows, final CRLF")
        let json = try JSONParser.parse(try s.sh("msg export --format json").out)
        guard case .array(let items) = json else { Issue.record("not an array"); return }
        #expect(items.count == 2 && items.allSatisfy { $0["history"] != nil })
    }

    /// A message sent after a failure shows no error in the views (a table, `queue
    /// show`): its history keeps the failure, and its record its last_error.
    @Test func aSentMessageShowsNoOldErrorInTheViews() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            id=$(msg compose --to a --body b --enqueue | cut -c8-43)
            msg flush --transport 'stdout:?fail=1&error=remote' > /dev/null 2>&1
            msg queue ls --format table | grep -c 'remote:'
            msg retry --now --transport stdout: > /dev/null 2>&1
            msg queue ls --status sent --format table | grep -c 'remote:'
            msg queue show ${id: -8} | grep -c '^last error'
            msg queue show ${id: -8} | grep -c 'failed'
            msg queue ls --status sent | grep -c '"last_error"'
            """)
        #expect(r.lines == ["1", "0", "0", "1", "1"], "\(r.out)\(r.err)")
    }
}
