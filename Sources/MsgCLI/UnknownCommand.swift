import ArgumentParser
import MsgKit

/// A command name that is not one: `msg flsuh`, `msg queue lss`, or a typo at the
/// `msg shell` prompt. Said in one line, with the nearest command, as git does.
enum UnknownCommand {
    /// The error for the first word of `arguments` that names no command where one
    /// is expected, or nil when every command word is known.
    static func check(_ arguments: [String]) -> MsgError? {
        // `msg help WORDS`: the words must name a command too.
        if arguments.first == "help", arguments.count > 1 {
            let words = Array(arguments.dropFirst())
            if words.first == "help" || words.first?.hasPrefix("-") == true { return nil }
            if let error = check(words) {
                let unknown = "unknown command"
                let rest = error.message.hasPrefix(unknown) ? String(error.message.dropFirst(unknown.count)) : ": " + error.message
                return MsgError(.usage, "help: no such command" + rest)
            }
            return nil
        }
        var command: any ParsableCommand.Type = MsgCommand.self
        var path: [String] = []
        for word in arguments {
            let subcommands = command.configuration.subcommands
            if word.hasPrefix("-") || subcommands.isEmpty { return nil }
            var names = subcommands.map { $0._commandName }
            if path.isEmpty { names.append("help") }
            guard let next = subcommands.first(where: { $0._commandName == word }) else {
                if names.contains(word) { return nil }  // help
                let typed = (path + [word]).joined(separator: " ")
                let hint = nearest(word, names).map { "; did you mean '\((path + [$0]).joined(separator: " "))'?" }
                    ?? "; the commands are \(names.joined(separator: ", "))"
                return MsgError(.usage, "unknown command '\(typed)'\(hint)")
            }
            command = next
            path.append(word)
        }
        return nil
    }

    /// The name closest to `word`, if one is close enough to be what was meant: a
    /// prefix of it, or at most one edit (two from five letters) away, counting a
    /// swap of neighbours as one.
    static func nearest(_ word: String, _ names: [String]) -> String? {
        if word.count >= 2, let prefixed = names.first(where: { $0.hasPrefix(word) }) { return prefixed }
        let allowed = word.count >= 5 ? 2 : 1
        let scored = names.map { (name: $0, distance: distance(Array(word), Array($0))) }
        guard let best = scored.min(by: { $0.distance < $1.distance }), best.distance <= allowed else { return nil }
        return best.name
    }

    /// Edits (insert, delete, replace, swap of neighbours) between `a` and `b`
    /// (optimal string alignment distance).
    static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }
}
