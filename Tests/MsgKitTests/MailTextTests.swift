import MsgKit
import MsgSupport
import Testing

/// ``MailText``: dates, encoded words, quoted-printable and line ends, by the rules
/// of RFC 5322, 2047 and 2045.
@Suite struct MailTextTests {
    func message(subject: String? = nil, body: String = "hi") -> Message {
        var m = Message(id: "0195f3a0-0000-7000-8000-000000000001", to: "bob@example.com", body: body,
                        now: Timestamp(milliseconds: 1_795_352_880_000))
        if let subject { m.headers = [("Subject", subject)] }
        return m
    }

    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test(arguments: [
        (0, "Thu, 1 Jan 1970 00:00:00 +0000"),
        (1_795_352_880_000, "Sun, 22 Nov 2026 13:08:00 +0000"),
        (951_868_799_000, "Tue, 29 Feb 2000 23:59:59 +0000"),
        (-500, "Wed, 31 Dec 1969 23:59:59 +0000"),
    ] as [(Int64, String)])
    func datesAreRFC5322(ms: Int64, date: String) {
        #expect(MailText.date(Timestamp(milliseconds: ms)) == date)
    }

    /// A long subject that is not ASCII: encoded words of whole characters, each at
    /// most 75 characters on a line of its own, that decode to the subject.
    @Test func aSubjectThatIsNotASCIIGoesAsEncodedWordsOfWholeCharacters() throws {
        let subject = String(repeating: "Grüße aus Köln, 東京 ", count: 8)
        let mail = text(try MailText.render(message(subject: subject)))
        let head = String(mail.split(separator: "\n\n", maxSplits: 1)[0]).split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(head.firstIndex { $0.hasPrefix("Subject:") })
        var words: [Substring] = [head[start].dropFirst("Subject: ".count)]
        for line in head[(start + 1)...] {
            guard line.hasPrefix(" ") else { break }
            words.append(line.dropFirst())
        }
        #expect(words.count > 3)
        var decoded: [UInt8] = []
        for word in words {
            #expect(word.count <= 75, "\(word)")
            #expect(word.hasPrefix("=?UTF-8?B?") && word.hasSuffix("?="))
            let bytes = try #require(Base64.decode(String(word.dropFirst(10).dropLast(2))))
            #expect(String(validating: bytes, as: UTF8.self) != nil, "a word holds whole characters")
            decoded += bytes
        }
        #expect(text(decoded) == subject)
    }

    /// `=`, a space or tab before a line end and bytes that are not ASCII are
    /// encoded; lines stay within 76 characters by soft breaks.
    @Test func quotedPrintableKeepsEveryByteAndShortLines() throws {
        let body = "a=b \nc\t\nÄ" + String(repeating: "x", count: 100)
        let mail = text(try MailText.render(message(body: body)))
        let parts = mail.split(separator: "\n\n", maxSplits: 1).map(String.init)
        #expect(parts[0].contains("Content-Transfer-Encoding: quoted-printable"))
        let lines = parts[1].split(separator: "\n", omittingEmptySubsequences: false)
        #expect(Array(lines.prefix(2)) == ["a=3Db=20", "c=09"])
        #expect(lines.allSatisfy { $0.count <= 76 }, "\(lines)")
        #expect(lines[2].hasPrefix("=C3=84xxx") && lines[2].hasSuffix("="))
        let rejoined = lines[2...].joined(separator: "\n").replacing("=\n", with: "")
        #expect(rejoined == "=C3=84" + String(repeating: "x", count: 100) + "\n")
    }

    /// On the wire every line ends in CRLF, none in a bare LF; ASCII goes 7bit.
    @Test func crlfOnTheWire() throws {
        let bytes = try MailText.render(message(subject: "plain", body: "one\r\ntwo\nthree"), lineEnding: .crlf)
        for (i, b) in bytes.enumerated() where b == 10 {
            #expect(i > 0 && bytes[i - 1] == 13, "a bare LF at \(i)")
        }
        let mail = text(bytes)
        #expect(mail.hasSuffix("\r\n\r\none\r\ntwo\r\nthree\r\n"))
        #expect(mail.contains("Content-Transfer-Encoding: 7bit\r\n"))
        #expect(mail.hasPrefix("To: bob@example.com\r\nSubject: plain\r\nDate: Sun, 22 Nov 2026 13:08:00 +0000\r\n"))
    }

    /// A display name that is not ASCII becomes encoded words (RFC 2047 5(3)), a
    /// quoted one unquoted first; the address, and every name in ASCII, stay as
    /// they are, in From, To and the address headers among the record's.
    @Test(arguments: [
        ("Jürgen <j@example.com>", "=?UTF-8?B?SsO8cmdlbg==?= <j@example.com>"),
        ("\"Müller, Jürgen\" <j@example.com>", "=?UTF-8?B?TcO8bGxlciwgSsO8cmdlbg==?= <j@example.com>"),
        ("Ann <a@example.com>, Jürgen <j@example.com>", "Ann <a@example.com>, =?UTF-8?B?SsO8cmdlbg==?= <j@example.com>"),
        ("\"Ann, B\" <a@example.com>", "\"Ann, B\" <a@example.com>"),
        ("jörg@example.com", "jörg@example.com"),
        ("Jörg <jörg@example.com>", "=?UTF-8?B?SsO2cmc=?= <jörg@example.com>"),
    ] as [(String, String)])
    func displayNamesGoAsEncodedWords(field: String, written: String) throws {
        var m = message(subject: "s")
        m.to = field
        m.from = field
        m.headers = [("Reply-To", field), ("Subject", "s")]
        let head = text(try MailText.render(m)).split(separator: "\n\n", maxSplits: 1)[0].split(separator: "\n").map(String.init)
        #expect(Array(head.prefix(4)) == ["From: \(written)", "To: \(written)", "Reply-To: \(written)", "Subject: s"])
    }

    /// A long name is cut into words of whole characters, each at most 75
    /// characters, that decode to it.
    @Test func aLongDisplayNameIsWordsOfWholeCharacters() throws {
        let name = String(repeating: "Grüße aus 東京 ", count: 6)
        let words = MailText.encodedWords(name)
        #expect(words.count > 2)
        var decoded: [UInt8] = []
        for word in words {
            #expect(word.count <= 75 && word.hasPrefix("=?UTF-8?B?") && word.hasSuffix("?="), "\(word)")
            let bytes = try #require(Base64.decode(String(word.dropFirst(10).dropLast(2))))
            #expect(String(validating: bytes, as: UTF8.self) != nil, "a word holds whole characters")
            decoded += bytes
        }
        #expect(text(decoded) == name)
    }
}
