import MsgKit
/// Splits a command line into words as a POSIX shell does, without expansion:
/// blanks separate words; `'…'` keeps everything literally; `"…"` keeps everything
/// but `\"`, `\\`, `\$` and `` \` ``, which lose their backslash; outside quotes a
/// backslash keeps the next character; `#` at the start of a word begins a comment.
/// Nothing is expanded: `$MSG_TO`, `*` and `;` are plain text. `msg shell` reads its
/// lines with it, and the `exec:` transport its command (which runs no shell).
public enum ShellWords {
    /// The words of `line`. - Throws: `usage` for an unclosed quote or a trailing backslash.
    public static func split(_ line: String) throws(MsgError) -> [String] {
        try scan(line).words
    }

    /// The words of a command given in a plugin's URL (`exec:`), at least one.
    /// - Throws: `config`, naming `what`, for an unclosed quote, a trailing backslash or no word.
    public static func command(_ text: String, what: String) throws(MsgError) -> [String] {
        let words: [String]
        do throws(MsgError) {
            words = try split(text)
        } catch {
            throw MsgError(.config, "\(what): \(error.message)")
        }
        guard !words.isEmpty else { throw MsgError(.config, "\(what): no command given") }
        return words
    }

    /// The words of `line` and whether the last one is still open (the cursor is in
    /// it, not after a blank), for completion. Unclosed quotes are allowed.
    public static func partial(_ line: String) -> (words: [String], lastIsOpen: Bool) {
        do {
            let s = try scan(line, lenient: true)
            return (s.words, s.open)
        } catch {
            return ([], false)
        }
    }

    private static func scan(_ line: String, lenient: Bool = false) throws(MsgError) -> (words: [String], open: Bool) {
        // Scalars, not Characters: a quote followed by a combining mark, or "\r\n",
        // is one Character in Swift and would be read as neither.
        var words: [String] = []
        var word = String.UnicodeScalarView()
        var inWord = false
        var chars = Array(line.unicodeScalars)[...]
        while let c = chars.popFirst() {
            switch c {
            case " ", "\t", "\n":
                if inWord { words.append(String(word)) }
                word = String.UnicodeScalarView()
                inWord = false
            case "#" where !inWord:
                return (words, false)
            case "'":
                inWord = true
                while true {
                    guard let q = chars.popFirst() else {
                        if lenient { return (words + [String(word)], true) }
                        throw MsgError(.usage, "unclosed ' in: \(line)")
                    }
                    if q == "'" { break }
                    word.append(q)
                }
            case "\"":
                inWord = true
                while true {
                    guard let q = chars.popFirst() else {
                        if lenient { return (words + [String(word)], true) }
                        throw MsgError(.usage, "unclosed \" in: \(line)")
                    }
                    if q == "\"" { break }
                    if q == "\\", let next = chars.first, "\"\\$`".unicodeScalars.contains(next) {
                        word.append(next)
                        chars = chars.dropFirst()
                    } else {
                        word.append(q)
                    }
                }
            case "\\":
                inWord = true
                guard let next = chars.popFirst() else {
                    if lenient { return (words + [String(word)], true) }
                    throw MsgError(.usage, "a backslash ends the line: \(line)")
                }
                if next != "\n" { word.append(next) }
            default:
                inWord = true
                word.append(c)
            }
        }
        if inWord { words.append(String(word)) }
        return (words, inWord)
    }
}
