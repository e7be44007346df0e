import MsgKit

/// A record as RFC 5322 mail: the one place msg writes mail (`exec:?input=mail`,
/// and the smtp:// transport after it).
///
/// The header block, in this order:
/// - `From:` the record's `from` (or the one given), `To:` its `to`;
/// - the record's `headers`, in their order, each name as given;
/// - `Date:` from `created_at`, `Message-ID: <ID@msg>` from msg's id (a receiver
///   drops a resend after a crash by it), `MIME-Version: 1.0`, `Content-Type:`
///   (`text/plain; charset=utf-8` unless a header gives one) and
///   `Content-Transfer-Encoding:`.
///
/// Nothing is sent altered: a header name that is not a field name (RFC 5322 2.2:
/// printable ASCII but `:`), a CR, LF or NUL in a name, a value, `to` or `from`, or a
/// header that msg writes itself (`To`, `From`, `Date`, `Message-ID`,
/// `MIME-Version`, `Content-Transfer-Encoding`) makes the record `rejected`, with
/// what and why: pasted into the block, a line break would add headers of the
/// sender's choosing (`Reply-To:`, `Bcc:`).
///
/// A value that is not printable ASCII is written as RFC 2047 encoded words
/// (`=?UTF-8?B?…?=`, each at most 75 characters, on lines of their own). In the
/// address fields (`From`, `To`, and `Reply-To`, `Cc`, `Bcc`, `Sender` among the
/// headers) a display name that is not ASCII becomes encoded words (RFC 2047 5(3))
/// and the address stays as it is: one that is not ASCII goes as UTF-8 (RFC 6532),
/// which the smtp:// transport sends only with SMTPUTF8 (RFC 6531). Long lines are
/// folded at spaces. A body that is
/// not ASCII, holds a line over 998 octets or a control character is sent
/// quoted-printable (RFC 2045 6.7), else 7bit. Line ends are `lineEnding`: LF for a
/// local command such as sendmail, CRLF on the wire.
public enum MailText {
    /// The end of each line.
    public enum LineEnding: Sendable {
        case lf, crlf
        var bytes: [UInt8] { self == .lf ? [10] : [13, 10] }
    }

    /// Headers among a record's whose values are addresses, lower-cased.
    static let addressHeaders: Set<String> = ["reply-to", "cc", "bcc", "sender"]

    /// The longest header name a mail line holds with its colon, a space and one
    /// encoded word (76 octets): 998 octets in all.
    static let longestName = 998 - 2 - 76

    /// Headers msg writes itself, lower-cased.
    static let ownHeaders: Set<String> = ["to", "from", "date", "message-id", "mime-version", "content-transfer-encoding"]

    /// The mail of `m`. - Throws: `rejected`, naming what would break the header block.
    public static func render(_ m: Message, from defaultFrom: String? = nil, lineEnding: LineEnding = .lf) throws(MsgError) -> [UInt8] {
        var w = Writer(end: lineEnding.bytes)
        if let from = m.from ?? defaultFrom {
            try w.addressField("From", encodedNames(try address(from, "the sender (from)")))
        }
        try w.addressField("To", encodedNames(try address(m.to, "the recipient (to)")))
        var contentType = "text/plain; charset=utf-8"
        for field in m.headers {
            let name = field.key
            guard !name.isEmpty, name.utf8.allSatisfy({ $0 >= 33 && $0 <= 126 && $0 != UInt8(ascii: ":") }) else {
                throw MsgError(.rejected, "header \(printable(name)) is not a mail field name (printable ASCII, no colon or space); not sent rather than sent altered")
            }
            // A name cannot be folded: with its colon, a space and one encoded word
            // (76 octets) its line must fit 998 (RFC 5322 2.1.1).
            guard name.utf8.count <= Self.longestName else {
                throw MsgError(.rejected, "header name of \(name.utf8.count) octets (\(printable(String(name.prefix(40))))…) makes a mail line over 998 octets, and a name cannot be folded (RFC 5322 2.1.1); not sent rather than sent altered")
            }
            if field.value.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) {
                throw MsgError(.rejected, "header \(name) holds a line break or NUL, which would add lines of its own to the mail's header; not sent rather than sent altered")
            }
            if !field.value.isEmpty && field.value.utf8.allSatisfy({ $0 == 32 || $0 == 9 }) {
                throw MsgError(.rejected, "header \(name) is whitespace alone, which no mail header line may be (RFC 5322 3.2.2); not sent rather than sent altered")
            }
            let lower = name.lowercased()
            guard !ownHeaders.contains(lower) else {
                throw MsgError(.rejected, "header \(name) is one msg writes itself (from the record's to, from, created_at and id); not sent rather than sent with two")
            }
            if lower == "content-type" {
                guard field.value.utf8.allSatisfy({ $0 >= 32 && $0 < 127 }) else {
                    throw MsgError(.rejected, "header Content-Type is not printable ASCII; not sent rather than sent altered")
                }
                contentType = field.value
                continue
            }
            if addressHeaders.contains(lower) {
                try w.addressField(name, encodedNames(field.value))
            } else {
                try w.field(name, field.value)
            }
        }
        let body = Array(m.body.utf8)
        let quoted = needsQuoting(body)
        try w.field("Date", date(m.createdAt))
        try w.field("Message-ID", "<\(m.id)@msg>")
        try w.field("MIME-Version", "1.0")
        try w.field("Content-Type", contentType)
        try w.field("Content-Transfer-Encoding", quoted ? "quoted-printable" : "7bit")
        w.out += w.end
        if quoted { quotedPrintable(body, into: &w.out, end: w.end) } else { lines(body, into: &w.out, end: w.end) }
        return w.out
    }

    /// `to` or `from`, refused when it would break a line.
    static func address(_ value: String, _ what: String) throws(MsgError) -> String {
        if value.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) {
            throw MsgError(.rejected, "\(what) holds a line break or NUL, which would add lines of its own to the mail's header; not sent rather than sent altered")
        }
        return value
    }

    /// An address field's value with each display name that is not ASCII written as
    /// RFC 2047 encoded words (`Jürgen <j@example.com>` becomes
    /// `=?UTF-8?B?SsO8cmdlbg==?= <j@example.com>`); a quoted name is unquoted first.
    /// Mailboxes are split at commas outside quotes, brackets and comments; the
    /// addresses, and all that is ASCII, stay as they are.
    static func encodedNames(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 >= 0x80 }) else { return value }
        return mailboxes(value).map(encodedMailbox).joined(separator: ",")
    }

    /// `value` cut at the commas between mailboxes.
    static func mailboxes(_ value: String) -> [Substring] {
        var parts: [Substring] = []
        var start = value.startIndex
        var quoted = false, escaped = false, angle = 0, comment = 0
        for i in value.indices {
            let c = value[i]
            if escaped { escaped = false; continue }
            switch c {
            case "\\" where quoted || comment > 0: escaped = true
            case "\"" where comment == 0: quoted.toggle()
            case "(" where !quoted: comment += 1
            case ")" where !quoted && comment > 0: comment -= 1
            case "<" where !quoted && comment == 0: angle += 1
            case ">" where !quoted && comment == 0 && angle > 0: angle -= 1
            case "," where !quoted && comment == 0 && angle == 0:
                parts.append(value[start..<i])
                start = value.index(after: i)
            default: break
            }
        }
        parts.append(value[start...])
        return parts
    }

    /// One mailbox with its display name encoded when it is not ASCII: the phrase
    /// before the last `<` of a mailbox that ends in `>`.
    static func encodedMailbox(_ mailbox: Substring) -> String {
        let lead = mailbox.prefix { $0 == " " || $0 == "\t" }
        var rest = mailbox.dropFirst(lead.count)
        while rest.last == " " || rest.last == "\t" { rest.removeLast() }
        guard rest.last == ">", let open = rest.lastIndex(of: "<") else { return String(mailbox) }
        var name = rest[..<open]
        while name.last == " " || name.last == "\t" { name.removeLast() }
        guard name.utf8.contains(where: { $0 >= 0x80 }) else { return String(mailbox) }
        var text = String(name)
        if name.count >= 2, name.first == "\"", name.last == "\"" {
            var unquoted = "", escaped = false
            for c in name.dropFirst().dropLast() {
                if !escaped && c == "\\" { escaped = true; continue }
                escaped = false
                unquoted.append(c)
            }
            text = unquoted
        }
        return String(lead) + encodedWords(text).joined(separator: " ") + " " + String(rest[open...])
    }

    /// RFC 2047 B encoded words of whole characters, each at most 75 characters.
    public static func encodedWords(_ text: String) -> [String] {
        var words: [String] = []
        var chunk: [UInt8] = []
        for c in text.unicodeScalars {
            let bytes = Array(String(c).utf8)
            if chunk.count + bytes.count > 45 {
                words.append("=?UTF-8?B?\(Base64.encode(chunk))?=")
                chunk.removeAll(keepingCapacity: true)
            }
            chunk += bytes
        }
        if !chunk.isEmpty { words.append("=?UTF-8?B?\(Base64.encode(chunk))?=") }
        return words
    }

    /// A name as a message may show it: control characters as `?`, at most 64 bytes.
    public static func printable(_ name: String) -> String {
        let shown = String(String.UnicodeScalarView(name.unicodeScalars.prefix(64).map { $0.value < 0x20 || $0.value == 0x7F ? "?" : $0 }))
        return "'\(shown)'"
    }

    /// RFC 5322 3.3: `Thu, 26 Nov 2026 13:11:00 +0000`.
    public static func date(_ t: Timestamp) -> String {
        let seconds = t.milliseconds >= 0 ? t.milliseconds / 1000 : (t.milliseconds - 999) / 1000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let (y, m, d) = Timestamp.civil(fromDays: days)
        let s = seconds - days * 86_400
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][Int(((days % 7) + 7) % 7)]
        let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][Int(m - 1)]
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(weekday), \(d) \(month) \(y) \(two(s / 3600)):\(two(s / 60 % 60)):\(two(s % 60)) +0000"
    }

    /// Whether a body must go quoted-printable: a byte that is not printable ASCII
    /// (but tab and line ends), a CR not before LF, or a line over 998 octets.
    static func needsQuoting(_ body: [UInt8]) -> Bool {
        var length = 0
        for (i, b) in body.enumerated() {
            if b == 10 { length = 0; continue }
            if b == 13 {
                if i + 1 < body.count, body[i + 1] == 10 { continue }
                return true
            }
            if b >= 127 || (b < 32 && b != 9) { return true }
            length += 1
            if length > 998 { return true }
        }
        return false
    }

    /// The body's lines (LF or CRLF in the record) with `end`, the last line ended too.
    static func lines(_ body: [UInt8], into out: inout [UInt8], end: [UInt8]) {
        var i = 0
        while i < body.count {
            let b = body[i]
            if b == 13, i + 1 < body.count, body[i + 1] == 10 { i += 1; continue }
            if b == 10 { out += end } else { out.append(b) }
            i += 1
        }
        if let last = body.last, last != 10 { out += end }
    }

    /// RFC 2045 6.7: lines of at most 76 characters, soft breaks `=`, the record's
    /// line ends as hard breaks, a space or tab before one encoded.
    static func quotedPrintable(_ body: [UInt8], into out: inout [UInt8], end: [UInt8]) {
        let hex = Array("0123456789ABCDEF".utf8)
        var column = 0
        func emit(_ piece: [UInt8]) {
            if column + piece.count > 75 {
                out.append(UInt8(ascii: "="))
                out += end
                column = 0
            }
            out += piece
            column += piece.count
        }
        var i = 0
        while i < body.count {
            let b = body[i]
            if b == 13, i + 1 < body.count, body[i + 1] == 10 { i += 1; continue }
            if b == 10 {
                out += end
                column = 0
                i += 1
                continue
            }
            let atLineEnd = i + 1 == body.count || body[i + 1] == 10 || (body[i + 1] == 13 && i + 2 < body.count && body[i + 2] == 10)
            let plain = (b >= 33 && b <= 126 && b != UInt8(ascii: "=")) || ((b == 32 || b == 9) && !atLineEnd)
            emit(plain ? [b] : [UInt8(ascii: "="), hex[Int(b >> 4)], hex[Int(b & 15)]])
            i += 1
        }
        if let last = body.last, last != 10 { out += end }
    }

    /// Writes header fields, folded.
    struct Writer {
        let end: [UInt8]
        var out: [UInt8] = []

        /// An unstructured field: as it is when printable ASCII (folded at spaces),
        /// else as encoded words.
        mutating func field(_ name: String, _ value: String) throws(MsgError) {
            let bytes = Array(value.utf8)
            if bytes.allSatisfy({ ($0 >= 32 && $0 < 127) || $0 == 9 }), fits(name, bytes) {
                folded(name, bytes)
            } else {
                encoded(name, value)
            }
        }

        /// An address field: as it is (UTF-8 where it is not ASCII, RFC 6532), folded.
        /// - Throws: `rejected` when a word of it cannot be folded to fit a line of 998
        ///   octets (an address cannot be written as encoded words).
        mutating func addressField(_ name: String, _ value: String) throws(MsgError) {
            let bytes = Array(value.utf8)
            guard fits(name, bytes) else {
                throw MsgError(.rejected, "\(name) holds a word of over 900 octets, which cannot be folded to a mail line of 998; not sent rather than sent altered")
            }
            guard bytes.isEmpty || !bytes.allSatisfy({ $0 == 32 || $0 == 9 }) else {
                throw MsgError(.rejected, "\(name) is whitespace alone; not sent rather than sent altered")
            }
            folded(name, bytes)
        }

        /// Whether every word of the value, and every run of whitespace (never a line
        /// of its own), fits a line of 998 octets once folded.
        private func fits(_ name: String, _ value: [UInt8]) -> Bool {
            var word = name.utf8.count + 2
            var blank = 0
            for b in value {
                if b == 32 || b == 9 { word = 0; blank += 1 } else { word += 1; blank = 0 }
                if word > 900 || blank > 900 { return false }
            }
            return true
        }

        /// `Name: value`, folded before a space where a line would pass 78 characters.
        private mutating func folded(_ name: String, _ value: [UInt8]) {
            out += Array(name.utf8) + [UInt8(ascii: ":"), 32]
            var column = name.utf8.count + 2
            var i = 0
            while i < value.count {
                var j = i + 1
                while j < value.count, value[j] != 32, value[j] != 9 { j += 1 }
                let word = value[i..<j]
                // Folded only before a word with something in it: a line of whitespace
                // alone is no header line (RFC 5322 3.2.2).
                if column + word.count > 78, column > name.utf8.count + 2, word.first == 32 || word.first == 9,
                   word.contains(where: { $0 != 32 && $0 != 9 }) {
                    out += end
                    column = 0
                }
                out += word
                column += word.count
                i = j
            }
            out += end
        }

        /// RFC 2047 B encoding, whole characters per word, one word a line.
        private mutating func encoded(_ name: String, _ value: String) {
            out += Array(name.utf8) + [UInt8(ascii: ":")]
            for word in MailText.encodedWords(value) { out += [32] + Array(word.utf8) + end }
        }
    }
}
