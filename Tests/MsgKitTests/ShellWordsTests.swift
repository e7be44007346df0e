import MsgKit
import MsgSupport
import Testing

@Suite struct ShellWordsTests {
    @Test(arguments: [
        ("queue ls --status failed", ["queue", "ls", "--status", "failed"]),
        ("  compose   --to bob\t--body 'hello world'  ", ["compose", "--to", "bob", "--body", "hello world"]),
        (#"compose --body "say \"hi\" \\ $ \n""#, ["compose", "--body", #"say "hi" \ $ \n"#]),
        (#"a\ b c\'d 'e\f'"#, ["a b", "c'd", #"e\f"#]),
        ("x''y \"\" ''", ["xy", "", ""]),
        ("queue ls # the rest is a comment", ["queue", "ls"]),
        ("a#b", ["a#b"]),
        ("", []),
    ])
    func splitsAsAShellDoes(line: String, words: [String]) throws {
        #expect(try ShellWords.split(line) == words)
    }

    @Test(arguments: ["compose --body 'open", "compose --body \"open", "trailing \\"])
    func refusesUnfinishedLines(line: String) {
        #expect(throws: MsgError(.usage, "")) { try ShellWords.split(line) }
    }

    @Test func partialLinesForCompletion() {
        #expect(ShellWords.partial("queue l").words == ["queue", "l"] && ShellWords.partial("queue l").lastIsOpen)
        #expect(ShellWords.partial("queue ").words == ["queue"] && !ShellWords.partial("queue ").lastIsOpen)
        #expect(ShellWords.partial("compose --body 'hel").words == ["compose", "--body", "hel"])
    }

    /// A plugin's command (`exec:`): the same words, its errors `config` and named.
    @Test func aCommandInAURLIsSplitTheSameWayWithConfigErrors() throws {
        #expect(try ShellWords.command("/bin/sh -c 'printf %s \"$MSG_TO\"'", what: "exec") == ["/bin/sh", "-c", "printf %s \"$MSG_TO\""])
        for bad in ["/bin/true 'open", "  ", "x \\"] {
            do {
                _ = try ShellWords.command(bad, what: "exec")
                Issue.record("\(bad) was split")
            } catch {
                #expect(error.code == .config && error.message.hasPrefix("exec: "), "\(bad): \(error.message)")
            }
        }
    }
}
