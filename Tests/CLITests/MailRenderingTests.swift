import Foundation
import MsgKit
import Testing

/// `exec:?input=mail` (#35): records become RFC 5322 mail that Python's `email`
/// package (a real reader) reads back with the same text, and a record whose
/// headers would break the mail's header block is never sent, through the binary.
@Suite(.timeLimit(.minutes(2))) struct MailRenderingTests {
    /// German subject and body, a long body line, a long subject, a Content-Type of
    /// the record's own: decoded, each is what the record said; Message-ID is msg's
    /// id, Date its creation. Injections in a header value, a header name, `to` and
    /// `from`, a name with a space and a header msg writes itself: each is dead with
    /// its reason, nothing written for it.
    @Test func mailReadsBackAsTheRecordAndInjectionsAreRefused() throws {
        let s = try Sandbox()
        _ = try s.file("capture", """
            #!/bin/sh
            cat > "mail/$MSG_ID.eml"
            """)
        let long = String(repeating: "Zeile ", count: 300)
        let records: [[String: Any]] = [
            ["to": "bob@example.com", "from": "Alice <alice@example.com>", "body": "Hallo,\nGrüße aus Köln! = 100 %\n\nTschüs ",
             "headers": ["Subject": "Grüße aus Köln", "X-Ticket": "4711"]],
            ["to": "carol@example.com", "body": long + "\n.\nend", "headers": ["Subject": String(repeating: "a long subject ", count: 12)]],
            ["to": "dave@example.com", "body": "<p>hi</p>", "headers": ["Subject": "html", "Content-Type": "text/html; charset=utf-8"]],
            ["to": "eve@example.com", "body": "x", "headers": ["Subject": "Invoice\nReply-To: attacker@evil.example"]],
            ["to": "eve@example.com", "body": "x", "headers": ["X-Evil\nBcc": "all@example.com"]],
            ["to": "eve@example.com\nBcc: all@example.com", "body": "x"],
            ["to": "eve@example.com", "from": "me\r\nBcc: all@example.com", "body": "x"],
            ["to": "eve@example.com", "body": "x", "headers": ["Bad Name": "y"]],
            ["to": "eve@example.com", "body": "x", "headers": ["Message-ID": "<forged@example.com>"]],
            ["to": "eve@example.com", "body": "x", "headers": ["X-Nul": "a\u{0}b"]],
        ]
        let lines = try records.map { String(decoding: try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]), as: UTF8.self) }
        _ = try s.file("drafts.ndjson", lines.joined(separator: "\n") + "\n")
        _ = try s.file("read.py", """
            import email, email.policy, email.utils, json, sys
            for line in sys.stdin:
                r = json.loads(line)
                try:
                    m = email.message_from_binary_file(open(f"mail/{r['id']}.eml", "rb"), policy=email.policy.default)
                except FileNotFoundError:
                    print("none", r["status"], r.get("last_error", {}).get("message", "")[:40]); continue
                body = m.get_content()
                same = body.rstrip("\\n") == r["body"].rstrip("\\n") and m["Subject"] == r["headers"]["Subject"]
                when = email.utils.parsedate_to_datetime(m["Date"]).strftime("%Y-%m-%dT%H:%M:%S")
                print("mail", r["status"], same, m["Message-ID"] == f"<{r['id']}@msg>", when == r["created_at"][:19],
                      m.get_content_type(), sorted(k.lower() for k in m.keys()) == sorted(
                          ["to", "date", "message-id", "mime-version", "content-type", "content-transfer-encoding"]
                          + [k.lower() for k in r["headers"] if k.lower() != "content-type"] + (["from"] if "from" in r else [])),
                      max(len(l) for l in open(f"mail/{r['id']}.eml", "rb").read().split(b"\\n")) <= 78)
            """)
        let r = try s.sh("""
            chmod +x capture; mkdir mail
            msg compose --enqueue < drafts.ndjson > /dev/null
            msg flush --transport "exec:$PWD/capture?input=mail" > /dev/null 2> err; echo "exit $?"
            msg queue ls --history | python3 read.py
            ls mail | wc -l
            """)
        #expect(r.lines == [
            "exit 1",
            "mail sent True True True text/plain True True",
            "mail sent True True True text/plain True True",
            "mail sent True True True text/html True True",
            "none dead header Subject holds a line break or NUL",
            "none dead header 'X-Evil?Bcc' is not a mail field ",
            "none dead the recipient (to) holds a line break or",
            "none dead the sender (from) holds a line break or ",
            "none dead header 'Bad Name' is not a mail field na",
            "none dead header Message-ID is one msg writes itse",
            "none dead header X-Nul holds a NUL character, whic",
            "3",
        ], "\(r.out) \(r.err)")
    }

    /// No mail line passes 998 octets and none is whitespace alone: a Subject of
    /// 200 spaces, or with a word of 2,000 octets, or with 1,500 spaces between two
    /// words, goes as encoded words or is dead; a `to` with a word of 2,000 octets,
    /// which cannot be encoded, is dead with why, and so is a header name of 1,202
    /// octets, which cannot be folded (one of 920, the longest, goes); the rest go.
    @Test func noMailLineIsLongerThan998OrWhitespaceAlone() throws {
        let s = try Sandbox()
        _ = try s.file("capture", """
            #!/bin/sh
            cat > "mail/$MSG_ID.eml"
            """)
        let records: [[String: Any]] = [
            ["to": "a@example.com", "body": "x", "headers": ["Subject": String(repeating: " ", count: 200)]],
            ["to": "b@example.com", "body": "x", "headers": ["Subject": "long " + String(repeating: "w", count: 2000)]],
            ["to": "c@example.com", "body": "x", "headers": ["Subject": "gap" + String(repeating: " ", count: 1500) + "end"]],
            ["to": "d" + String(repeating: "d", count: 2000) + "@example.com", "body": "x"],
            ["to": "e@example.com", "body": "x", "headers": ["Subject": "fine " + String(repeating: "word  ", count: 60)]],
            ["to": "f@example.com", "body": "x", "headers": ["X-" + String(repeating: "n", count: 1200): "v"]],
            ["to": "g@example.com", "body": "x", "headers": ["X-" + String(repeating: "n", count: 918): "ü"]],
        ]
        let lines = try records.map { String(decoding: try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]), as: UTF8.self) }
        _ = try s.file("drafts.ndjson", lines.joined(separator: "\n") + "\n")
        let r = try s.sh("""
            chmod +x capture; mkdir mail
            msg compose --enqueue < drafts.ndjson > /dev/null
            msg flush --transport "exec:$PWD/capture?input=mail" > /dev/null; echo $?
            msg queue ls --format csv | tail -n +2 | cut -d, -f2 | sort | uniq -c | tr -s ' '
            cat mail/*.eml | awk '{ sub(/\\r$/, "") } length($0) > 998 { long++ } /^[ \\t]+$/ { blank++ } END { print long + 0, blank + 0 }'
            msg queue ls --status dead | grep -o 'whitespace alone\\|cannot be folded to a mail line of 998\\|header name of 1202 octets' | sort | uniq -c | tr -s ' '
            """)
        #expect(r.lines == ["1", " 3 dead", " 4 sent", "0 0", " 1 cannot be folded to a mail line of 998", " 1 header name of 1202 octets", " 1 whitespace alone"], "\(r.out) \(r.err)")
    }
}
