#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// The config file: `key = value` lines, `#` comments. Keys: `store`, `transport`,
/// `plugin_path`, `listen`, and the retry policy (`max_attempts`, `backoff_base`,
/// `backoff_cap`, `give_up_after`, named after the flags). A `[destination PATTERN]`
/// line starts a section for the destinations whose recipient matches PATTERN (as
/// `--to`: fnmatch(3)): its `transport` and policy keys apply to them, as Postfix's
/// transport(5) table routes mail; the first section that matches a recipient wins.
/// Values may use `$MSG_HOME`, `$HOME` and a leading `~/` (also right after a
/// scheme: `sqlite:~/q.db`).
///
/// Read from `--config`/`MSG_CONFIG` (which must exist), else
/// `$XDG_CONFIG_HOME/msg/config` or `~/.config/msg/config` when present.
enum ConfigFile {
    static let policyKeys: Set<String> = ["max_attempts", "backoff_base", "backoff_cap", "give_up_after"]
    static let keys = Set(["store", "transport", "plugin_path", "listen"]).union(policyKeys)
    static let sectionKeys = Set(["transport"]).union(policyKeys)

    /// A value and where it was written, for errors that name the line.
    struct Value: Sendable, Equatable {
        var text: String
        var line: Int
    }

    /// A `[destination PATTERN]` section.
    struct Section: Sendable, Equatable {
        var pattern: String
        var line: Int
        var values: [String: Value] = [:]
    }

    /// What a config file says.
    struct Contents: Sendable, Equatable {
        var path = ""
        var values: [String: Value] = [:]
        var sections: [Section] = []
        subscript(key: String) -> String? { values[key]?.text }

        /// An error about `value` of `key`, naming the file and line.
        func error(_ key: String, _ value: Value, _ why: String) -> MsgError {
            MsgError(.config, "\(path) line \(value.line): \(key): \(why)")
        }
    }

    /// - Throws: `config` for a missing explicit file, an unreadable one or a bad line.
    static func load(explicit: String?, env: (String) -> String?) throws(MsgError) -> Contents {
        let path: String
        if let explicit {
            path = explicit
        } else if let xdg = env("XDG_CONFIG_HOME") {
            path = xdg + "/msg/config"
        } else if let home = env("HOME") {
            path = home + "/.config/msg/config"
        } else {
            return Contents()
        }
        let text: String
        do throws(MsgError) {
            text = try readText(path)
        } catch {
            let cause = error.underlying as? Errno
            if explicit == nil, cause?.rawValue == ENOENT { return Contents() }
            throw MsgError(.config, "cannot read config file \(path): \(cause?.description ?? error.message)", underlying: cause)
        }
        return try parse(text, path: path)
    }

    /// Parses a config file's text.
    static func parse(_ text: String, path: String) throws(MsgError) -> Contents {
        var contents = Contents(path: path)
        // Lines split as bytes: "\r\n" is one Character in Swift, not "\n".
        for (i, raw) in text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            let line = String(decoding: raw, as: UTF8.self).trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]"), line.dropFirst().hasPrefix("destination ") else {
                    throw MsgError(.config, "\(path) line \(i + 1): expected '[destination PATTERN]', a section for the destinations matching PATTERN")
                }
                let pattern = String(line.dropFirst("[destination ".count).dropLast()).trimmingSpaces()
                guard !pattern.isEmpty else { throw MsgError(.config, "\(path) line \(i + 1): the section names no destination pattern") }
                contents.sections.append(Section(pattern: pattern, line: i + 1))
                continue
            }
            guard let eq = line.firstIndex(of: "=") else {
                throw MsgError(.config, "\(path) line \(i + 1): expected 'key = value'")
            }
            let key = String(line[..<eq]).trimmingSpaces()
            let value = Value(text: String(line[line.index(after: eq)...]).trimmingSpaces(), line: i + 1)
            if let last = contents.sections.indices.last {
                guard sectionKeys.contains(key) else {
                    throw MsgError(.config, "\(path) line \(i + 1): '\(key)' cannot be set per destination; in a [destination] section: \(sectionKeys.sorted().joined(separator: ", "))")
                }
                contents.sections[last].values[key] = value
            } else {
                guard keys.contains(key) else {
                    throw MsgError(.config, "\(path) line \(i + 1): unknown key '\(key)'; known keys: \(keys.sorted().joined(separator: ", "))")
                }
                contents.values[key] = value
            }
        }
        return contents
    }

    static func readText(_ path: String) throws(MsgError) -> String {
        let fd = try SystemCalls.open(path, O_RDONLY, code: .config)
        defer { close(fd) }
        return String(decoding: try SystemCalls.readToEnd(fd, code: .config, what: path), as: UTF8.self)
    }

    static func expand(_ value: String, home: String, env: (String) -> String?) -> String {
        var v = value.replacingOccurrences(of: "$MSG_HOME", with: home)
        guard let user = env("HOME") else { return v }
        v = v.replacingOccurrences(of: "$HOME", with: user)
        // `~/` at the start of the value or of the path after a scheme (`sqlite:~/q.db`).
        if v.hasPrefix("~/") {
            v = user + v.dropFirst(1)
        } else if let colon = v.firstIndex(of: ":"), v[v.index(after: colon)...].hasPrefix("~/") {
            v = String(v[...colon]) + user + v[v.index(colon, offsetBy: 2)...]
        }
        return v
    }
}

extension String {
    /// The string with every `target` replaced by `replacement`.
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
