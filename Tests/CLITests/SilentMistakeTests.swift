import Testing

/// Mistakes that once passed in silence (#50): each is now one line and a
/// non-zero exit, and what was there is left as it was.
@Suite(.timeLimit(.minutes(3))) struct SilentMistakeTests {
    /// A file drop whose parent is missing is a typo, not a tree to create; the
    /// drop itself is made, and `?parents=yes` asks for its parents too.
    @Test func aFileDropNeedsItsParentOrAsksForIt() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            echo '{"to":"a","body":"x"}' | msg compose --enqueue > /dev/null
            msg flush --transport file:$PWD/nonexistent/x > /dev/null 2> err; echo "missing $?"
            ls -d nonexistent 2> /dev/null | wc -l
            msg queue count --status queued
            msg flush --transport file:$PWD/drop > /dev/null; echo "drop $? $(ls drop/new | wc -l)"
            echo '{"to":"b","body":"y"}' | msg compose --enqueue > /dev/null
            msg flush --transport "file:$PWD/deep/er/drop?parents=yes" > /dev/null; echo "parents $? $(ls deep/er/drop/new | wc -l)"
            mkdir real; ln -s real linked
            echo '{"to":"c","body":"z"}' | msg compose --enqueue > /dev/null
            msg flush --transport "file:$PWD/linked/drop" > /dev/null; echo "through a link $? $(ls real/drop/new | wc -l)"
            sed "s|$PWD|DIR|g" err
            """)
        #expect(r.lines == [
            "missing 78", "0", "1", "drop 0 1", "parents 0 1", "through a link 0 1",
            "msg: 'file:DIR/nonexistent/x': DIR/nonexistent is no directory; create it, or add ?parents=yes to have msg create it",
        ], "\(r.out)\(r.err)")
    }

    /// `--to` takes patterns; suspend and resume name one destination, so a pattern
    /// that names none is refused rather than suspending a destination called `api.*`.
    @Test func aDestinationCommandRefusesAPatternThatNamesNone() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            printf '{"to":"api.1","body":"x"}\\n{"to":"api.2","body":"y"}\\n' | msg compose --enqueue > /dev/null
            msg destinations suspend 'api.*' --reason test 2> err; echo "suspend $?"
            msg destinations resume 'api.[12]' 2>> err; echo "resume $?"
            msg destinations --format ndjson | grep -c suspended
            msg destinations suspend api.1 --reason test 2> /dev/null; echo "one $?"
            msg destinations --format ndjson | grep -c suspended
            cat err
            """)
        #expect(r.lines == [
            "suspend 64", "resume 64", "0", "one 0", "1",
            "msg: destinations suspend: 'api.*' is a pattern, and no destination is named so; name one destination as msg destinations lists it (patterns are for --to)",
            "msg: destinations resume: 'api.[12]' is a pattern, and no destination is named so; name one destination as msg destinations lists it (patterns are for --to)",
        ], "\(r.out)\(r.err)")
    }

    /// A JSON store that is a symbolic link is refused before anything is stored:
    /// its compaction would turn the link into a file and leave the target behind.
    @Test func aJSONStoreThatIsALinkIsRefused() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            echo '{"to":"a","body":"x"}' | msg compose --enqueue --store json:real.json > /dev/null
            ln -s real.json link.json
            echo '{"to":"b","body":"y"}' | msg compose --enqueue --store json:link.json > /dev/null 2> err; echo "link $?"
            msg queue count --store json:real.json; test -L link.json && echo "still a link"
            cat err
            """)
        #expect(r.lines == ["link 78", "1", "still a link",
                            "msg: json store link.json is a symbolic link; name the file it points to (msg rewrites the store in place, which would replace the link)"],
                "\(r.out)\(r.err)")
    }

    /// msg makes its own home for its default outbox and inbox: a fresh account's
    /// first flush, and its first listen, need no directory made by hand.
    @Test func msgMakesItsOwnHomeForItsDefaultDrops() throws {
        let s = try Sandbox()
        let fresh = s.home + "/fresh/msg"
        let listener = try ListenerProcess(s, environment: ["MSG_HOME": fresh])
        let r = try s.sh("""
            echo '{"to":"a","body":"x"}' | MSG_HOME=$PWD/other/msg msg compose --enqueue > /dev/null
            MSG_HOME=$PWD/other/msg msg flush --transport tcp://127.0.0.1:\(listener.port) > /dev/null; echo "listen $?"
            ls fresh/msg/inbox/new | wc -l
            rm -r other; echo '{"to":"b","body":"y"}' | MSG_HOME=$PWD/other/msg msg compose --enqueue --store "sqlite:$PWD/q.sqlite" > /dev/null
            MSG_HOME=$PWD/other/msg msg flush --store "sqlite:$PWD/q.sqlite" > /dev/null; echo "outbox $? $(ls other/msg/outbox/new | wc -l)"
            """)
        _ = listener.stop()
        #expect(r.lines == ["listen 0", "1", "outbox 0 1"], "\(r.out)\(r.err)")
    }
}
