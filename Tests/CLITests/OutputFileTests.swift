import Testing

/// The rule for files the user names for output (docs/DESIGN.md 7, `OutputPath`):
/// a regular file is replaced through a rename, a FIFO or a character device is
/// written in place, and nothing else is ever renamed over or written through.
@Suite(.timeLimit(.minutes(3))) struct OutputFileTests {
    /// One failed message to export, in a sandbox with a file, a link to it and a FIFO.
    private func setUp() throws -> Sandbox {
        let s = try Sandbox()
        let r = try s.sh("""
            echo '{"to":"a","body":"x"}' | msg compose --enqueue > /dev/null
            msg flush --transport exec:false > /dev/null 2>&1
            echo kept > target; ln -s target link; mkfifo fifo; mkdir dir
            msg queue count --status failed,dead
            """)
        #expect(r.lines == ["1"], "\(r.err)")
        return s
    }

    @Test func exportReplacesOnlyARegularFile() throws {
        let s = try setUp()
        let r = try s.sh("""
            msg export --out link 2> link.err; echo "link $? $(cat target) $(stat -c %F link)"
            msg export --out dir 2> dir.err; echo "dir $? $(stat -c %F dir)"
            msg export --out /dev/full 2> full.err; echo "full $? $(stat -c %F /dev/full)"
            cat fifo > from-fifo & reader=$!
            msg export --out fifo 2> fifo.err; echo "fifo $? $(stat -c %F fifo)"
            wait $reader; echo "read $(grep -c '"to":"a"' from-fifo)"
            msg export --out /dev/stdout 2> stdout.err | grep -c '"to":"a"'
            msg export --out plain 2> /dev/null; echo "plain $? $(sha256sum -c plain.sha256)"
            ls fifo.sha256 link.sha256 dir.sha256 stdout.sha256 2> /dev/null | wc -l
            cat link.err dir.err full.err fifo.err stdout.err
            """)
        #expect(Array(r.lines.prefix(8)) == [
            "link 64 kept symbolic link", "dir 64 directory", "full 74 character special file", "fifo 0 fifo",
            "read 1", "1", "plain 0 plain: OK", "0",
        ], "\(r.out)\(r.err)")
        #expect(Array(r.lines.dropFirst(8)) == [
            "msg: --out link is a symbolic link; msg writes only a regular file of its own, a FIFO or a character device; nothing was written there",
            "msg: --out dir is a directory; msg writes only a regular file of its own, a FIFO or a character device; nothing was written there",
            "msg: cannot write /dev/full: No space left on device",
            "msg: exported 1 message to fifo",
            "msg: exported 1 message to /dev/stdout",
        ], "\(r.out)")
    }

    /// The other options that name a file to write keep the same rule: appended
    /// files refuse a link (before the run sends anything), and files that must be
    /// files refuse a stream.
    @Test func everyOutputOptionKeepsTheRule() throws {
        let s = try setUp()
        let r = try s.sh("""
            msg flush --transport stdout: --events link > /dev/null 2>&1; echo "events $? $(cat target)"
            msg ledger keygen --key k > /dev/null; ln -s target cp
            echo '{"to":"b","body":"y"}' | msg compose --enqueue > /dev/null
            msg flush --transport stdout: --checkpoint-key k --checkpoint-to cp > /dev/null 2>&1; echo "checkpoint $? $(cat target)"
            msg queue count --status queued
            msg flush --transport stdout: --checkpoint-key k --checkpoint-to /dev/stdout | grep -c '"ledger":"msg-ledger 1"'
            mkdir prom; ln -s ../target prom/msg.prom
            msg metrics --textfile prom > /dev/null 2>&1; echo "textfile $? $(cat target)"
            msg ledger keygen --key fifo > /dev/null 2>&1; echo "keygen $?"
            msg export --out fifo --proof k > /dev/null 2>&1; echo "proof $?"
            """)
        #expect(r.lines == ["events 64 kept", "checkpoint 64 kept", "1", "1", "textfile 64 kept", "keygen 64", "proof 64"], "\(r.out)\(r.err)")
    }
}
