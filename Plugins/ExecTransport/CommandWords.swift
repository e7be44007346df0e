import MsgKit

/// Splits the command of an `exec:` URL into its words, as a POSIX shell splits
/// a simple command but without running one: blanks separate words, `'…'` keeps
/// everything literally, `"…"` keeps everything but `\"` and `\\`, a backslash
/// outside quotes keeps the next character. Nothing is expanded: `$MSG_TO`, `*`
/// and `;` are plain text, so a command that wants them names a shell
/// (`exec:/bin/sh -c '…'`), where they are read from the environment msg sets.
enum CommandWords {
    /// The words of `text`, at least one. - Throws: `config` for an unclosed quote,
    /// a trailing backslash or no word at all.
    static func split(_ text: String, what: String) throws(MsgError) -> [String] {
        var words: [String] = []
        var word = ""
        var inWord = false
        var chars = Array(text)[...]
        while let c = chars.popFirst() {
            switch c {
            case " ", "\t", "\n":
                if inWord { words.append(word) }
                word = ""
                inWord = false
            case "'", "\"":
                inWord = true
                while true {
                    guard let q = chars.popFirst() else { throw MsgError(.config, "\(what): unclosed \(c) in '\(text)'") }
                    if q == c { break }
                    if c == "\"", q == "\\", let next = chars.first, next == "\"" || next == "\\" {
                        word.append(next)
                        chars = chars.dropFirst()
                    } else {
                        word.append(q)
                    }
                }
            case "\\":
                inWord = true
                guard let next = chars.popFirst() else { throw MsgError(.config, "\(what): a backslash ends '\(text)'") }
                word.append(next)
            default:
                inWord = true
                word.append(c)
            }
        }
        if inWord { words.append(word) }
        guard !words.isEmpty else { throw MsgError(.config, "\(what): no command given") }
        return words
    }
}
