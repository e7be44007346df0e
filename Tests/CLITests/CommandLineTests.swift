import Foundation
import MsgKit
import Testing

@Suite(.timeLimit(.minutes(3))) struct CommandLineTests {
    @Test func versionAndUsageErrors() throws {
        let s = try Sandbox()
        let v = try s.sh("msg --version")
        #expect(v.status == 0 && v.out == MsgVersion.current + "\n")
        #expect(try s.sh("msg queue ls --bogus").status == 64)
        #expect(try s.sh("msg queue ls --status lost").status == 64)
        #expect(try s.sh("msg queue ls --since yesterday").status == 64)
        #expect(try s.sh("msg compose --body x").status == 64)
        let h = try s.sh("msg --help")
        #expect(h.status == 0 && h.out.contains("compose") && h.out.contains("queue"))
    }

    /// One `msg:` line, exit 64, and the nearest command, as git does; the same at
    /// the `msg shell` prompt.
    @Test func aMistypedCommandSuggestsTheNearest() throws {
        let s = try Sandbox()
        let cases = [("msg flsuh", "unknown command 'flsuh'; did you mean 'flush'?"),
                     ("msg queue lss", "unknown command 'queue lss'; did you mean 'queue ls'?"),
                     ("msg que", "unknown command 'que'; did you mean 'queue'?"),
                     ("msg xyzzy", "unknown command 'xyzzy'; the commands are compose, queue, flush, retry, recover, destinations, route, config, metrics, export, ledger, listen, inbox, web, shell, plugins, help")]
        for (command, said) in cases {
            let r = try s.sh(command)
            #expect(r.status == 64 && r.err == "msg: \(said)\n" && r.out.isEmpty, "\(command): \(r.err)")
        }
        let shell = try s.sh("echo 'reocver' | msg shell")
        #expect(shell.status == 64 && shell.err.hasPrefix("msg: unknown command 'reocver'; did you mean 'recover'?\n"), "\(shell.err)")
        #expect(!shell.err.contains("Usage:"))
    }

    /// argument-parser's errors are one `msg:` line too, with the help to read;
    /// `--help` stays whole on standard output; `help` of no command is an error.
    @Test func commandLineErrorsAreOneLine() throws {
        let s = try Sandbox()
        let cases = [
            ("msg queue ls --status nosuch", "msg: The value 'nosuch' is invalid for '--status <list>': unknown status 'nosuch'; expected one of queued, held, sending, failed, sent, delivered, read, dead (see msg queue ls --help)"),
            ("msg queue ls --stauts queued", "msg: queue ls has no option --stauts (did you mean --status?); see msg queue ls --help"),
            // An option of another command is named as such, before what became of its value.
            ("msg retry --status failed", "msg: retry has no option --status; queue ls, queue count, queue rm… have it; see msg retry --help"),
            ("msg flush --bogus", "msg: flush has no option --bogus; see msg flush --help"),
            ("msg flush --watch --to x@y", "msg: --watch sends every message that becomes due; a filter (--to, --header…) is for one run (see msg flush --help)"),
            // A negative value is a value, not a missing one.
            ("msg queue ls --min-attempts -1", "msg: The value '-1' is invalid for '--min-attempts <min-attempts>': expected a whole number, 1 or more (see msg queue ls --help)"),
            ("msg queue ls --error bogus", "msg: The value 'bogus' is invalid for '--error <code>': unknown code 'bogus'; expected one of rate_limited, rejected, remote, timeout, unreachable, expired, corrupt or none (see msg queue ls --help)"),
            ("msg queue mark --status sent x", "msg: The value 'sent' is invalid for '--status <status>': expected delivered or read (see msg queue mark --help)"),
            ("msg queue stats --by recipient", "msg: The value 'recipient' is invalid for '--by <grouping>': expected status or destination (see msg queue stats --help)"),
            ("msg export --redact headers", "msg: The value 'headers' is invalid for '--redact <redact>': expected body (see msg export --help)"),
            ("msg flush --deadline 3x", "msg: The value '3x' is invalid for '--deadline <deadline>': invalid duration '3x': unknown unit 'x'; write a number and a unit (ms, s, m, h, d, w), e.g. 250ms, 5s, 2m, 1h, 7d, 2w (see msg flush --help)"),
            // Every count option is read by one rule (ArgumentValue.count).
            ("msg queue ls --limit -1", "msg: The value '-1' is invalid for '--limit <limit>': expected a whole number, 1 or more (see msg queue ls --help)"),
            ("msg flush --limit -3", "msg: The value '-3' is invalid for '--limit <limit>': expected a whole number, 1 or more (see msg flush --help)"),
            ("msg retry --limit 0", "msg: The value '0' is invalid for '--limit <limit>': expected a whole number, 1 or more (see msg retry --help)"),
            ("msg flush --batch 0", "msg: The value '0' is invalid for '--batch <batch>': expected a whole number, 1 or more (see msg flush --help)"),
            ("msg flush --concurrency 300", "msg: The value '300' is invalid for '--concurrency <concurrency>': expected a whole number, from 1 to 256 (see msg flush --help)"),
            ("msg flush --max-attempts -1", "msg: The value '-1' is invalid for '--max-attempts <max-attempts>': expected a whole number, 0 or more (see msg flush --help)"),
            ("msg metrics --top 0", "msg: The value '0' is invalid for '--top <top>': expected a whole number, from 1 to 10000 (see msg metrics --help)"),
            ("msg help nosuch", "msg: help: no such command 'nosuch'; the commands are compose, queue, flush, retry, recover, destinations, route, config, metrics, export, ledger, listen, inbox, web, shell, plugins, help"),
            ("msg help queue lss", "msg: help: no such command 'queue lss'; did you mean 'queue ls'?"),
        ]
        for (command, said) in cases {
            let r = try s.sh(command)
            #expect(r.status == 64 && r.err == said + "\n" && r.out.isEmpty, "\(command): \(r.err)")
        }
        let help = try s.sh("msg help flush; echo $?; msg flush --help | head -1")
        #expect(help.lines.first == "OVERVIEW: Send due messages, in order per destination; print each record." && help.err.isEmpty, "\(help.out)")
        #expect(help.lines.contains("0"))
    }

    /// The generated completions offer statuses and the ids in the store, as bash
    /// asks for them; `-V` and `version` print the version.
    @Test func completionsOfferStatusesAndStoredIds() throws {
        let s = try Sandbox()
        let id = try s.sh("msg compose --to a --body b --enqueue | cut -c8-43").out.trimmingCharacters(in: .newlines)
        let script = try s.sh("msg --generate-completion-script bash").out
        #expect(script.contains("'queued'$'\\n''held'$'\\n''sending'") && script.contains("''dead'$'\\n''all'"), "statuses are offered")
        let ids = try s.sh("SAP_SHELL=bash msg ---completion queue hold -- positional@0 3 2 msg queue hold \(id.prefix(8))")
        #expect(ids.out == id + "\n", "\(ids.out)\(ids.err)")
        // The short id a table shows (the id's end) is offered the whole id too
        // (msg shell completes it; bash's script keeps only what starts with the word).
        let short = try s.sh("SAP_SHELL=bash msg ---completion queue hold -- positional@0 3 8 msg queue hold \(id.suffix(8))")
        #expect(short.out == id + "\n", "\(short.out)\(short.err)")
        let version = try s.sh("msg -V; msg version; msg --version")
        #expect(version.lines.count == 3 && Set(version.lines).count == 1, "\(version.out)")
    }

    @Test func theConfigFileExpandsHomeAfterTheScheme() throws {
        let s = try Sandbox()
        let config = try s.file("msg.conf", "store = sqlite:~/tilde.sqlite\ntransport = file:$HOME/drop\n")
        let r = try s.sh("""
            msg compose --to a --body b | msg queue add --config \(config) > /dev/null
            msg flush --config \(config) > /dev/null
            ls tilde.sqlite; ls drop/new | wc -l
            """, env: ["HOME": s.home])
        #expect(r.lines == ["tilde.sqlite", "1"], "\(r.out)\(r.err)")
    }

    /// Long work says how far along it is on a terminal, as "N of TOTAL", and
    /// leaves no trace in the records; off a terminal it says nothing.
    @Test func progressShowsATotalAtATerminalOnly() throws {
        let s = try Sandbox()
        let queued = try s.sh(#"for n in $(seq 200); do echo "{\"to\":\"u$n\",\"body\":\"b\"}"; done | msg compose --enqueue | wc -l"#)
        #expect(queued.out == "200\n", "\(queued.err)")
        let t = try TerminalSession("cd '\(s.home)' && MSG_HOME='\(s.home)' XDG_CONFIG_HOME='\(s.home)/config' '\(buildDirectory)/msg' flush --transport 'stdout:?fd=3&latency=10ms' > flushed 3>/dev/null")
        #expect(t.waitFor(" of 200") != nil, "a total while it runs: \(t.screen)")
        #expect(t.waitFor("EXITED 0") != nil, "\(t.screen)")
        let piped = try s.sh("msg queue count --status sent; wc -l < flushed")
        #expect(piped.lines == ["200", "200"] && piped.err.isEmpty, "\(piped.out)\(piped.err)")
    }

    @Test func unknownSchemeExits69AndSaysWhatIsKnown() throws {
        let s = try Sandbox()
        let r = try s.sh("msg queue ls --store redis://localhost")
        #expect(r.status == 69)
        #expect(r.err.hasPrefix("msg: no store plugin for scheme 'redis:' (known store schemes: json:"), "\(r.err)")
        #expect(r.err.split(separator: "\n").count == 1)
    }

    @Test func aPluginInAWorldWritableDirectoryIsRefused() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            mkdir bad && cp "\(buildDirectory)"/lib{JSONFileStore,SQLiteStore}.so bad/ && chmod 777 bad
            msg compose --to a --body b --enqueue > /dev/null
            msg queue count --plugin-path "$PWD/bad"
            """)
        #expect(r.status == 69)
        #expect(r.err.contains("refusing plugin") && r.err.contains("is writable by group or others (mode 777)"), "\(r.err)")
        let listing = try s.sh("MSG_PLUGIN_PATH=$PWD/bad msg plugins")
        #expect(listing.status == 69 && listing.err.contains("refusing plugin"))
    }

    @Test func pluginsAreListed() throws {
        let s = try Sandbox()
        let r = try s.sh("msg plugins")
        #expect(r.status == 0, "\(r.err)")
        let rows = try r.lines.map { try JSONParser.parse($0) }
        let names = rows.compactMap { $0["name"]?.stringValue }
        #expect(names.contains("JSONFileStore") && names.contains("StdoutTransport"))
        let json = try #require(rows.first { $0["name"]?.stringValue == "JSONFileStore" })
        #expect(json["kind"]?.stringValue == "store" && json["schemes"] == .array([.string("json")]))
        #expect(json["path"]?.stringValue?.hasSuffix("libJSONFileStore.so") == true)
    }

    @Test func settingsComeFromFlagThenEnvironmentThenConfigFile() throws {
        let s = try Sandbox()
        _ = try s.file("cfg", "# msg config\nstore = json:$MSG_HOME/from-config.json\n")
        let r = try s.sh("""
            msg compose --to a --body b --enqueue --config cfg >/dev/null
            MSG_STORE=json:$PWD/from-env.json msg compose --to a --body b --enqueue --config cfg >/dev/null
            MSG_STORE=json:$PWD/from-env.json msg compose --to a --body b --enqueue --config cfg --store json:$PWD/from-flag.json >/dev/null
            ls *.json
            """)
        #expect(r.lines == ["from-config.json", "from-env.json", "from-flag.json"], "\(r.out)\(r.err)")
        let missing = try s.sh("msg queue count --config nope")
        #expect(missing.status == 78 && missing.err.contains("cannot read config file nope"))
        _ = try s.file("badcfg", "stroe = x\n")
        let bad = try s.sh("msg queue count --config badcfg")
        #expect(bad.status == 78 && bad.err.contains("line 1: unknown key 'stroe'"))
    }

    @Test func listingFiltersAndFormats() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            msg compose --to ann --body 'a, "quoted"' --enqueue >/dev/null
            msg compose --to bob --body 'two
            lines' --enqueue >/dev/null
            msg compose --to bob --body three --enqueue >/dev/null
            """)
        #expect(r.status == 0, "\(r.err)")
        #expect(try s.sh("msg queue count --to bob").out == "2\n")
        #expect(try s.sh("msg queue count --status held").out == "0\n")
        #expect(try s.sh("msg queue count --since 1h --limit 2").out == "2\n")
        let limited = try records(try s.sh("msg queue ls --to bob --limit 1").out)
        #expect(limited.map(\.body) == ["two\nlines"])
        let csv = try s.sh("msg queue ls --format csv").out
        #expect(csv.hasPrefix("id,status,attempts,to,from,body,headers,created_at,updated_at,not_before,next_attempt_at,expires_at,last_error_code,last_error_message,history\r\n"))
        #expect(csv.contains(#",ann,,"a, ""quoted""","#))
        #expect(csv.contains(",bob,,\"two\nlines\","))
        let json = try JSONParser.parse(try s.sh("msg queue ls --format json").out)
        guard case .array(let items) = json else { Issue.record("not an array"); return }
        #expect(items.count == 3)
        #expect(try s.sh("msg queue ls --format json --to nobody").out == "[]\n")
        let table = try s.sh("msg queue ls --format table").lines
        #expect(table.count == 4 && table[0].hasPrefix("ID") && table[2].contains("two lines"))
    }
}
