import Foundation
import MsgKit
import Testing

/// Delivery under crashes: every id reaches the drop directory exactly once and
/// ends `sent`, whatever point the flushing process dies at.
@Suite(.timeLimit(.minutes(5))) struct FlushCrashTests {
    /// Every stored record's id, status and number of attempts.
    func state(_ s: Sandbox) throws -> [(id: String, status: Status, attempts: Int)] {
        try records(try s.sh("msg queue ls --history").out).map { m in
            (m.id, m.status, m.history.filter { $0.event == "attempt" }.count)
        }
    }

    /// The ids delivered to the drop directory, in new/ and cur/ (a duplicate
    /// delivery shows up as an id in both).
    func dropped(_ s: Sandbox) throws -> [String] {
        try ["new", "cur"].flatMap { dir in
            try FileManager.default.contentsOfDirectory(atPath: s.home + "/outbox/" + dir).map { String($0.dropLast(5)) }
        }
    }

    /// A reader of the drop takes what was delivered so far (new/ -> cur/), as a
    /// mail reader does; a second delivery of one of those ids would land in new/.
    func consume(_ s: Sandbox) throws {
        let r = try s.sh("mkdir -p outbox/cur; for f in outbox/new/*.json; do [ -e \"$f\" ] && mv \"$f\" outbox/cur/; done; true")
        #expect(r.status == 0, "\(r.err)")
    }

    func fiveHundred(_ s: Sandbox) throws {
        let r = try s.sh("seq 500 | awk '{printf \"{\\\"to\\\":\\\"u%d\\\",\\\"body\\\":\\\"m%d\\\"}\\n\", $1, $1}' | msg compose --enqueue | wc -l")
        #expect(r.out == "500\n", "\(r.err)")
    }

    func expectEveryIdOnceAndSent(_ s: Sandbox, _ label: String) throws {
        let st = try state(s)
        #expect(st.count == 500, "\(label): \(st.count) records")
        #expect(st.allSatisfy { $0.status == .sent }, "\(label): not sent: \(st.filter { $0.status != .sent }.prefix(3))")
        let files = try dropped(s)
        #expect(files.count == Set(files).count, "\(label): \(files.count - Set(files).count) messages delivered twice")
        #expect(Set(files) == Set(st.map(\.id)), "\(label): \(Set(files).count) of 500 ids in the drop")
        let tmp = try FileManager.default.contentsOfDirectory(atPath: s.home + "/outbox/tmp")
        #expect(tmp.allSatisfy { files.contains(String($0.prefix(36))) }, "\(label): a tmp file that never reached new/")
    }

    @Test(arguments: ["before-sending", "after-sending", "after-delivery", "after-sent"])
    func killedAtAFaultPointThenRecoveredDeliversEachOnce(point: String) throws {
        let s = try Sandbox()
        try fiveHundred(s)
        let killed = try s.sh("MSG_FAULT=\(point):250 msg flush --batch 64 > /dev/null; echo $?")
        #expect(killed.out == "137\n", "\(point): the flush was not killed: \(killed.out) \(killed.err)")
        // Batches of 64: message 250 is in the fourth. While one batch is delivered the
        // next is already claimed, so the batch before the kill may still be sending.
        let counts = try s.sh("msg queue count --status queued; msg queue count --status sending; msg queue count --status sent").lines.compactMap { Int($0) }
        let (queued, sending, sent) = (counts[0], counts[1], counts[2])
        switch point {
        case "before-sending":
            #expect(500 - queued == 192, "the killed claim of the fourth batch must leave no trace: \(counts)")
        case "after-sent":
            #expect(sent >= 256, "the fourth batch's outcomes were committed before the kill: \(counts)")
        default:
            #expect(sending >= 64, "\(point): the killed batch is left sending: \(counts)")
        }
        try consume(s)
        let r = try s.sh("msg recover --stale-after 0s > /dev/null; msg flush > /dev/null; echo $?; msg recover --stale-after 0s")
        #expect(r.out == "0\n", "\(point): \(r.out) \(r.err)")
        try expectEveryIdOnceAndSent(s, point)
        if point == "after-delivery" {
            #expect(r.err.contains("already delivered (sent)"), "recover uses lookup: \(r.err)")
        }
    }

    /// Right after a crash the killed batch is younger than --stale-after: recover
    /// then says what it left alone and why (at a terminal or with -v), not nothing.
    @Test func recoverRightAfterACrashSaysWhatItLeftAlone() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            seq 20 | awk '{printf "{\\"to\\":\\"u%d\\",\\"body\\":\\"b\\"}\\n", $1}' | msg compose --enqueue > /dev/null
            MSG_FAULT=after-sending:1 msg flush --batch 8 > /dev/null; echo "killed $?"
            msg recover > /dev/null; echo "quiet $?"
            msg recover -v > /dev/null; echo "told $?"
            msg recover --stale-after 0s > /dev/null; echo "recovered $?"
            """)
        #expect(r.lines == ["killed 137", "quiet 0", "told 0", "recovered 0"], "\(r.out)\(r.err)")
        let said = r.err.split(separator: "\n").map(String.init).filter { $0.hasPrefix("msg: ") }
        #expect(said.count == 2, "without -v and off a terminal only recoveries are said: \(r.err)")
        #expect(said.first?.hasPrefix("msg: left ") == true && said.first?.contains("sending for less than --stale-after (5s)") == true, "\(r.err)")
        #expect(said.last?.hasPrefix("msg: recovered ") == true, "\(r.err)")
    }

    @Test func randomKillsThenRecoverDeliverEachOnce() throws {
        var rng = SystemRandomNumberGenerator()
        for round in 0..<20 {
            let s = try Sandbox()
            try fiveHundred(s)
            let killAfter = Int.random(in: 0..<500, using: &rng)
            try s.killFlush(["flush", "--batch", "8"], after: killAfter)
            try consume(s)
            let r = try s.sh("msg recover --stale-after 0s > /dev/null; msg flush > /dev/null; echo $?")
            #expect(r.out == "0\n", "round \(round): \(r.err)")
            try expectEveryIdOnceAndSent(s, "round \(round), killed after \(killAfter)")
            #expect(try state(s).allSatisfy { $0.attempts <= 2 }, "round \(round): a message was attempted more than twice")
        }
    }

    @Test func twoFlushersNeverSendOneMessageTwice() throws {
        let s = try Sandbox()
        let made = try s.sh("seq 2000 | awk '{printf \"{\\\"to\\\":\\\"u\\\",\\\"body\\\":\\\"%d\\\"}\\n\", $1}' | msg compose --enqueue | wc -l")
        #expect(made.out == "2000\n")
        let r = try s.sh("""
            msg flush --batch 16 > a & pa=$!
            msg flush --batch 16 > b & pb=$!
            wait $pa; ea=$?; wait $pb; eb=$?; echo "$ea $eb"
            cat a b | wc -l
            cat a b | cut -c8-43 | sort | uniq -d | wc -l
            """)
        #expect(r.lines == ["0 0", "2000", "0"], "\(r.out)\(r.err)")
        let st = try state(s)
        #expect(st.count == 2000 && st.allSatisfy { $0.status == .sent && $0.attempts == 1 }, "each message attempted once")
        #expect(try dropped(s).count == 2000)
    }
}
