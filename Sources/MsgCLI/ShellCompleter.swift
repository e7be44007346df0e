import ArgumentParser
import MsgEngine
import MsgKit
import MsgSupport

/// What `msg shell` completes with TAB: subcommands, the options of the current
/// subcommand, status names, formats, plugin schemes, and message ids by prefix.
struct ShellCompleter {
    /// One command of msg's tree, read from argument-parser's own description of it,
    /// so the completion never disagrees with the parser.
    struct Node {
        var name = ""
        var options: [String] = []
        var takesValue: Set<String> = []
        var subcommands: [Node] = []

        init(_ json: JSONValue) {
            name = json["commandName"]?.stringValue ?? ""
            if case .array(let arguments)? = json["arguments"] {
                for argument in arguments where argument["kind"]?.stringValue != "positional" {
                    guard case .array(let names)? = argument["names"] else { continue }
                    for n in names {
                        guard let text = n["name"]?.stringValue else { continue }
                        let option = (n["kind"]?.stringValue == "short" ? "-" : "--") + text
                        options.append(option)
                        if argument["kind"]?.stringValue == "option" { takesValue.insert(option) }
                    }
                }
            }
            if case .array(let subs)? = json["subcommands"] { subcommands = subs.map(Node.init) }
        }

        init(name: String) { self.name = name }
    }

    let root: Node
    /// Ids of stored messages starting with a prefix.
    let ids: (String) -> [String]

    /// The tree of `MsgCommand`, plus the shell's own `help` and `exit`.
    init(ids: @escaping (String) -> [String]) {
        var root = Node(name: "msg")
        do {
            _ = try MsgCommand.parseAsRoot(["--experimental-dump-help"])
        } catch {
            if let json = try? JSONParser.parse(MsgCommand.fullMessage(for: error)), let command = json["command"] {
                root = Node(command)
            }
        }
        root.subcommands += [Node(name: "help"), Node(name: "exit")]
        self.root = root
        self.ids = ids
    }

    /// The completions of `text`, the word being typed, after `before` (the line up
    /// to that word).
    func candidates(before: String, text: String) -> [String] {
        var words = ShellWords.partial(before).words
        if words.first == "msg" { words.removeFirst() }
        var node = root
        var rest = words[...]
        while let w = rest.first, let sub = node.subcommands.first(where: { $0.name == w }) {
            node = sub
            rest = rest.dropFirst()
        }
        if let previous = rest.last, node.takesValue.contains(previous) {
            return values(of: previous, text: text)
        }
        if text.hasPrefix("-") { return node.options.filter { $0.hasPrefix(text) } }
        if rest.isEmpty && !node.subcommands.isEmpty {
            var seen = Set<String>()
            return node.subcommands.map(\.name).filter { $0.hasPrefix(text) && seen.insert($0).inserted }
        }
        return ids(text)
    }

    /// Values for option `option`; a comma list (`--status failed,de`) completes its last item.
    private func values(of option: String, text: String) -> [String] {
        let choices: [String]
        switch option {
        case "--status": choices = Status.allCases.map(\.rawValue)
        case "--format": choices = OutputFormat.allCases.map(\.rawValue)
        case "--store": choices = Completion.storeSchemes
        case "--transport", "--into": choices = Completion.transportSchemes
        case "--on-error": choices = OnError.allCases.map(\.rawValue)
        case "--redact": choices = ["body"]
        default: return []
        }
        let (head, last) = text.lastIndex(of: ",").map { (String(text[...$0]), String(text[text.index(after: $0)...])) } ?? ("", text)
        return choices.filter { $0.hasPrefix(last) }.map { head + $0 }
    }
}
