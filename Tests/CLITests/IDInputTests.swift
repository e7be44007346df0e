import Foundation
import Testing

/// One rule for ids on standard input (#31), for every command that takes them,
/// through the real binary: a pipe or a file gives the ids, and one that names none
/// means nothing is done ("0 messages", exit 0); only a terminal, /dev/null or a
/// closed input leaves the choice to the filter, or is a usage error for the
/// commands that never act on all.
@Suite(.timeLimit(.minutes(3))) struct IDInputTests {
    /// A command, the message piped to it, and how many records it prints when it
    /// acts on that one and when it acts on all it would (nil: it needs ids, 64).
    struct Case {
        var name: String
        var command: String
        var piped: String
        var one: Int
        var all: Int?
    }

    static let send = "--transport 'stdout:?fd=3' 3>/dev/null"
    static let cases: [Case] = [
        Case(name: "flush", command: "msg flush \(send)", piped: "A", one: 1, all: 2),
        Case(name: "retry", command: "msg retry --now \(send)", piped: "F", one: 1, all: 2),
        Case(name: "recover", command: "msg recover --stale-after 0s \(send)", piped: "A", one: 0, all: 0),
        Case(name: "export", command: "msg export", piped: "F", one: 1, all: 2),
        Case(name: "ls", command: "msg queue ls", piped: "A", one: 1, all: 7),
        Case(name: "count", command: "msg queue count", piped: "A", one: 1, all: 7),
        Case(name: "show", command: "msg queue show --format ndjson", piped: "A", one: 1, all: nil),
        Case(name: "rm", command: "msg queue rm --status queued", piped: "A", one: 1, all: 2),
        Case(name: "hold", command: "msg queue hold --status queued", piped: "A", one: 1, all: 2),
        Case(name: "release", command: "msg queue release --status held", piped: "H", one: 1, all: 2),
        Case(name: "edit", command: "msg queue edit --body changed", piped: "A", one: 1, all: nil),
        Case(name: "mark", command: "msg queue mark --status delivered", piped: "S", one: 1, all: nil),
    ]

    /// Seven messages: two queued (A first), two failed (F first), one sent (S), two
    /// held (H first); the store is kept as template.sqlite and each case runs on a copy.
    static let seed = """
        set -e
        printf '%s\\n' '{"to":"s@x","body":"s"}' '{"to":"f1@x","body":"f"}' '{"to":"f2@x","body":"f"}' | msg compose --enqueue > /dev/null
        msg flush --transport 'stdout:?fd=3&fail_to=f1@x,f2@x' 3>/dev/null > /dev/null 2>&1 || true
        printf '%s\\n' '{"to":"h1@x","body":"h"}' '{"to":"h2@x","body":"h"}' | msg compose --enqueue | msg queue hold > /dev/null 2>&1
        printf '%s\\n' '{"to":"a@x","body":"a"}' '{"to":"b@x","body":"b"}' | msg compose --enqueue > /dev/null
        id() { msg queue ls --to "$1" --format csv < /dev/null | sed -n 2p | cut -d, -f1; }
        A=$(id a@x) F=$(id f1@x) S=$(id s@x) H=$(id h1@x)
        cp queue.sqlite template.sqlite
        set +e
        # run VARIANT NAME COMMAND ID: one line "NAME VARIANT STATUS PRINTED ZERO-SAID".
        run() {
            cp template.sqlite "$2-$1.sqlite"
            export MSG_STORE="sqlite:$PWD/$2-$1.sqlite"
            case $1 in
                empty) true | eval "$3" > out 2> err ;;
                ids) echo "$4" | eval "$3" > out 2> err ;;
                devnull) eval "$3" < /dev/null > out 2> err ;;
                terminal) eval "$3" > out 2> err ;;
            esac
            status=$?
            if [ "$2" = count ]; then printed=$(cat out); else printed=$(grep -c '^{' out); fi
            echo "$2 $1 $status $printed $(grep -c '^msg: 0 messages' err)"
            unset MSG_STORE
        }

        """

    func script(variants: [String]) -> String {
        var lines = [Self.seed]
        for variant in variants {
            for c in Self.cases {
                lines.append("run \(variant) \(c.name) \(shellQuoted(c.command)) \"$\(c.piped)\"")
            }
        }
        return lines.joined(separator: "\n")
    }

    func shellQuoted(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    /// What each case must print: "NAME VARIANT STATUS PRINTED ZERO-SAID".
    func expected(_ variant: String) -> [String] {
        Self.cases.map { c in
            switch variant {
            case "empty": return "\(c.name) empty 0 0 1"
            case "ids": return "\(c.name) ids 0 \(c.one) 0"
            default:
                guard let all = c.all else { return "\(c.name) \(variant) 64 0 0" }
                return "\(c.name) \(variant) 0 \(all) 0"
            }
        }
    }

    @Test func pipesFilesAndDevNull() throws {
        let s = try Sandbox()
        let r = try s.sh(script(variants: ["empty", "ids", "devnull"]))
        #expect(r.lines == expected("empty") + expected("ids") + expected("devnull"), "\(r.out)\n\(r.err)")
    }

    /// A file on stdin is read as a pipe is: `msg queue rm < ids.txt`.
    @Test func aFileOfIDsIsRead() throws {
        let s = try Sandbox()
        let r = try s.sh(Self.seed + """
            echo "$A" > ids.txt; : > empty.txt
            msg queue rm < ids.txt | grep -c "$A"
            msg flush \(Self.send) < empty.txt | wc -l
            msg queue count --status queued < /dev/null
            """)
        #expect(r.lines == ["1", "0", "1"], "\(r.out) \(r.err)")
        #expect(r.err.contains("msg: 0 messages: standard input is an empty pipe or file, which names none (as cron gives a job); to act on every message the command takes, run it with </dev/null"), "\(r.err)")
    }

    @Test func aTerminalLeavesTheChoiceToTheFilter() throws {
        let s = try Sandbox()
        let path = s.home + "/terminal.sh"
        try script(variants: ["terminal"]).write(toFile: path, atomically: true, encoding: .utf8)
        let results = s.home + "/results"
        let terminal = try TerminalSession("cd \(s.home) && export MSG_HOME=\(s.home) XDG_CONFIG_HOME=\(s.home)/config PATH=\(buildDirectory):$PATH && bash \(path) > \(results) 2>&1")
        #expect(terminal.waitFor("EXITED") != nil, "\(terminal.screen)")
        let lines = try String(contentsOfFile: results, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines == expected("terminal"), "\(lines)")
    }
}
