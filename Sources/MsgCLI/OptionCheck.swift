import ArgumentParser

/// What was typed, said as typed: an option the command does not have is named as
/// such (`msg: retry has no option --status; queue ls has it; see msg retry
/// --help`), before whatever argument-parser made of it ("'failed' is not a
/// message id"); and a negative number after an option that takes a value is that
/// value (`--min-attempts -1`), not a missing one. Asked only when parsing failed,
/// so a good command line pays nothing.
enum OptionCheck {
    /// The options of a command, from its help: each name, and whether it takes a value.
    static func options(of command: any ParsableCommand.Type) -> [String: Bool] {
        var found: [String: Bool] = ["--help": false, "-h": false]
        let help = MsgCommand.helpMessage(for: command, includeHidden: true, columns: 10_000)
        for line in help.split(separator: "\n") {
            let text = line.drop { $0 == " " }
            guard text.first == "-", line.first == " " else { continue }
            // "-v, --verbose" or "--to <recipient>   help…"
            let words = text.split(separator: " ", omittingEmptySubsequences: true)
            for (i, word) in words.enumerated() {
                let name = word.hasSuffix(",") ? String(word.dropLast()) : String(word)
                guard name.hasPrefix("-") else { break }
                let takesValue = words.indices.contains(i + 1) && words[i + 1].hasPrefix("<")
                found[name] = takesValue
                if !word.hasSuffix(",") { break }
            }
        }
        // A group's default command takes the group's place (`msg destinations --format`).
        if let sub = command.configuration.defaultSubcommand { found.merge(options(of: sub)) { a, _ in a } }
        return found
    }

    /// The command the words name, and how many words that took.
    static func command(_ arguments: [String]) -> (any ParsableCommand.Type, [String]) {
        var command: any ParsableCommand.Type = MsgCommand.self
        var path: [String] = []
        for word in arguments {
            guard let next = command.configuration.subcommands.first(where: { $0._commandName == word }) else { break }
            command = next
            path.append(word)
        }
        return (command, path)
    }

    /// Every command below `root`, with its words.
    static func all(_ root: any ParsableCommand.Type = MsgCommand.self, path: [String] = []) -> [(any ParsableCommand.Type, [String])] {
        root.configuration.subcommands.flatMap { sub in [(sub, path + [sub._commandName])] + all(sub, path: path + [sub._commandName]) }
    }

    /// The line for the first option typed that the command does not have, if any.
    static func unknown(_ arguments: [String]) -> String? {
        let (command, path) = command(arguments)
        let known = options(of: command)
        for word in arguments.dropFirst(path.count) {
            if word == "--" { break }
            guard word.hasPrefix("-"), word.count > 1, Double(word) == nil else { continue }
            let name = String(word.split(separator: "=", maxSplits: 1).first ?? "")
            // Short flags run together (-vq) are argument-parser's to judge.
            guard name.hasPrefix("--") || name.count == 2, known[name] == nil else { continue }
            let name0 = path.isEmpty ? "msg" : path.joined(separator: " ")
            let others = all().filter { !$0.1.isEmpty && $0.1 != path && $0.0.configuration.subcommands.isEmpty && options(of: $0.0)[name] != nil }
            let having = others.prefix(3).map { $0.1.joined(separator: " ") }
            var hint = having.isEmpty ? "" : "; \(having.joined(separator: ", "))\(others.count > 3 ? "…" : "") \(having.count == 1 ? "has" : "have") it"
            if having.isEmpty, let near = UnknownCommand.nearest(name, known.keys.filter { $0.hasPrefix("--") }.sorted()) {
                hint = " (did you mean \(near)?)"
            }
            return "\(name0) has no option \(name)\(hint); see msg \(path.isEmpty ? "" : path.joined(separator: " ") + " ")--help"
        }
        return nil
    }

    /// The arguments with each negative number that follows an option taking a
    /// value joined to it (`--min-attempts=-1`); nil when there is none.
    static func joiningNegativeValues(_ arguments: [String]) -> [String]? {
        let (command, path) = command(arguments)
        let known = options(of: command)
        var out = Array(arguments.prefix(path.count))
        var changed = false
        var rest = arguments.dropFirst(path.count)[...]
        while let word = rest.popFirst() {
            if word == "--" {
                out.append(word)
                out += rest
                break
            }
            if known[word] == true, let next = rest.first, next.hasPrefix("-"), Double(next) != nil {
                out.append(word + "=" + next)
                rest = rest.dropFirst()
                changed = true
            } else {
                out.append(word)
            }
        }
        return changed ? out : nil
    }
}
