import Foundation
import MsgKit
import MsgKitTesting
import Testing

@Suite(.timeLimit(.minutes(3))) struct PipelineTests {
    @Test func composeQueueAddLsGivesTheSameRecordBack() throws {
        let s = try Sandbox()
        let r = try s.sh("msg compose --to a --body hi > composed && msg queue add < composed > added && msg queue ls --history")
        #expect(r.status == 0, "\(r.err)")
        let composed = try String(contentsOfFile: s.home + "/composed", encoding: .utf8)
        let added = try String(contentsOfFile: s.home + "/added", encoding: .utf8)
        #expect(added == composed)
        #expect(r.out == composed)
        let m = try #require(try records(composed).first)
        #expect(m.to == "a" && m.body == "hi" && m.status == .queued && m.history.map(\.event) == ["queued"])
        // ls waits for what add acknowledges on its stdin and lists exactly that.
        let plain = try s.sh("msg compose --to a --body again | msg queue add | msg queue ls --history")
        #expect(plain.status == 0)
        #expect(try records(plain.out).map(\.body) == ["again"])
        let one = try s.sh("msg queue ls | tail -1 | msg queue ls")
        #expect(try records(one.out).map(\.body) == ["again"])
        let bare = try s.sh("msg queue ls | head -1 | cut -c8-43 | msg queue count; echo nonsense | msg queue count")
        #expect(bare.lines == ["1", "0"])
        #expect(bare.err.contains("msg: line 1: 'nonsense' is not a message id"))
    }

    @Test func tenThousandDraftsLeaveTenThousandRecords() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            seq 10000 | awk '{printf "{\\"to\\":\\"u%d\\",\\"body\\":\\"m%d\\"}\\n", $1, $1}' \
              | msg compose | msg queue add | wc -l; echo "${PIPESTATUS[*]}"; msg queue count
            """)
        #expect(r.lines == ["10000", "0 0 0 0 0", "10000"], "\(r.err)")
        let ls = try s.sh("msg queue ls")
        let all = try records(ls.out)
        #expect(Set(all.map(\.id)).count == 10000)
        #expect(all.map(\.body) == (1...10000).map { "m\($0)" }, "FIFO order is composition order")
    }

    @Test func garbageLinesAreNamedAndGoodOnesStored() throws {
        let s = try Sandbox()
        let good = try s.sh("msg compose --to x --body one; msg compose --to y --body two").out.split(separator: "\n")
        let input = "\(good[0])\nnot json\n{\"id\":\"nope\"}\n\n\(good[1])\n[1,2]\n{\"truncated\":"
        let r = try s.sh("msg queue add > added", stdin: input)
        #expect(r.status == 65)
        #expect(r.err.split(separator: "\n") == [
            "msg: line 2: invalid JSON: invalid literal at column 1",
            "msg: line 3: field \"id\" must be a lower-case UUID such as 01890a5d-ac96-774b-bcce-b302099a8057",
            "msg: line 6: expected a JSON object, got an array",
            "msg: line 7: invalid JSON: unexpected end of input at column 14",
        ])
        #expect(try s.sh("msg queue count").out == "2\n")
    }

    @Test func invalidUTF8AndOverlongLinesAreReported() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            { printf '{"to":"a","body":"\\xff"}\\n'; head -c 1100000 /dev/zero | tr '\\0' 'a'; echo; echo '{"to":"b","body":"ok"}'; } \
              | msg compose | msg queue add | wc -l
            """)
        #expect(r.out == "1\n")
        #expect(r.err.contains("msg: line 1: invalid UTF-8 at column 19"), "\(r.err)")
        #expect(r.err.contains("msg: line 2: line longer than the limit of 1048576 bytes"), "\(r.err)")
    }

    @Test func abortStoresNothingWhenAnyLineIsBad() throws {
        let s = try Sandbox()
        let good = try s.sh("msg compose --to x --body one").out
        let r = try s.sh("msg queue add --on-error abort", stdin: good + "bad\n" + good)
        #expect(r.status == 65 && r.out.isEmpty)
        #expect(r.err.contains("line 2") && r.err.contains("nothing was stored"))
        #expect(try s.sh("msg queue count").out == "0\n")
    }

    @Test func anIdAlreadyStoredIsNotStoredTwice() throws {
        let s = try Sandbox()
        let r = try s.sh("msg compose --to a --body hi > one; msg queue add < one; msg queue add < one; cat one one | msg queue add; msg queue count")
        #expect(r.lines.last == "1", "\(r.out)\(r.err)")
        #expect(r.status == 0)
    }

    @Test func unknownFieldsTravelThroughUnchanged() throws {
        let s = try Sandbox()
        let r = try s.sh(#"echo '{"to":"a","body":"b","trace":{"span":"x1","n":1.50},"tags":["p",null]}' | msg compose | msg queue add >/dev/null; msg queue ls"#)
        #expect(r.out.hasSuffix(#","trace":{"span":"x1","n":1.50},"tags":["p",null]}"# + "\n"), "\(r.out)")
    }

    @Test func aLineTypedByHandIsStoredAndEchoedAtOnce() throws {
        let s = try Sandbox()
        let line = try s.sh("msg compose --to a --body typed").out
        let p = TestProcess()
        p.executableURL = URL(fileURLWithPath: buildDirectory + "/msg")
        p.arguments = ["queue", "add"]
        p.environment = ["MSG_HOME": s.home, "XDG_CONFIG_HOME": s.home + "/config"]
        let input = Pipe(), output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        try p.run()
        input.fileHandleForWriting.write(Data(line.utf8))
        // Stdin stays open: the echo must come without waiting for more input...
        var echoed = Data()
        while !echoed.contains(0x0A) { echoed += output.fileHandleForReading.availableData }
        #expect(String(decoding: echoed, as: UTF8.self) == line)
        // ...and only after the record is on disk, visible to another process.
        #expect(try s.sh("msg queue count").out == "1\n")
        try input.fileHandleForWriting.close()
        try p.wait()
        #expect(p.terminationStatus == 0)
    }

    @Test func bodyFromStdinAndHeaders() throws {
        let s = try Sandbox()
        let r = try s.sh("printf 'multi\\nline\\n' | msg compose --to a --body - --from me --header k=v --header x=y=z")
        let m = try #require(try records(r.out).first)
        #expect(m.body == "multi\nline" && m.from == "me")
        #expect(m.headers.map { "\($0.key)=\($0.value)" } == ["k=v", "x=y=z"])
    }
}
