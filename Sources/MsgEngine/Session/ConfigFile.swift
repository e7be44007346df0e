#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// Something wrong in the config file, at a line: an error (a command refuses to
/// run, 78) or a warning (said by `msg config check`, and by the runs it concerns).
public struct ConfigProblem: Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var line: Int
    public var text: String
    public var isError = true
    /// As said: `FILE line N: TEXT`, with `warning: ` before a warning.
    public var description: String { (isError ? "" : "warning: ") + "\(path) line \(line): \(text)" }
    public var error: MsgError { MsgError(.config, "\(path) line \(line): \(text)") }
}

/// The config file: `key = value` lines, `#` comments. Keys: `store`, `transport`,
/// `plugin_path`, `listen`, the retry policy (`max_attempts`, `backoff_base`,
/// `backoff_cap`, `give_up_after`) and the run's per-destination rules (`deadline`,
/// `concurrency`, `rate`, `burst`, `breaker`, `breaker_cooldown`), named after the
/// flags. A `[destination PATTERN]` line starts a section for the destinations whose
/// recipient matches PATTERN (as `--to`: fnmatch(3)): its `transport`, policy and
/// rule keys apply to them, as Postfix's transport(5) table routes mail; the first
/// section that matches a recipient and sets a key wins. Values may use
/// `$MSG_HOME`, `$HOME` and a leading `~/` (also right after a scheme:
/// `sqlite:~/q.db`). msg-config(5) lists every key.
///
/// Read from `--config`/`MSG_CONFIG` (which must exist), else
/// `$XDG_CONFIG_HOME/msg/config` or `~/.config/msg/config` when present. What is
/// wrong in it is kept as ``ConfigProblem``s, each naming its line: a command refuses the
/// first error (78), `msg config check` lists them all.
enum ConfigFile {
    static let policyKeys = ["max_attempts", "backoff_base", "backoff_cap", "give_up_after"]
    static let ruleKeys = ["deadline", "concurrency", "rate", "burst", "breaker", "breaker_cooldown"]
    static let sectionKeys = Set(["transport"] + policyKeys + ruleKeys)
    static let keys = Set(["store", "plugin_path", "listen"]).union(sectionKeys)

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
        /// What is wrong in it, in the order of its lines.
        var problems: [ConfigProblem] = []
        subscript(key: String) -> String? { values[key]?.text }

        /// An error about `value` of `key` at its line.
        func problem(_ key: String, _ value: Value, _ why: String) -> ConfigProblem {
            ConfigProblem(path: path, line: value.line, text: "\(key): \(why)")
        }
    }

    /// - Throws: `config` for a missing explicit file or an unreadable one.
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
        return parse(text, path: path)
    }

    /// Parses a config file's text: a line that does not read, an unknown key (with
    /// the known one it nearly is) or a key set twice is kept as a problem, and the
    /// rest read on.
    static func parse(_ text: String, path: String) -> Contents {
        var contents = Contents(path: path)
        func problem(_ line: Int, _ text: String, error: Bool = true) {
            contents.problems.append(ConfigProblem(path: path, line: line, text: text, isError: error))
        }
        // Lines split as bytes: "\r\n" is one Character in Swift, not "\n".
        for (i, raw) in text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            let n = i + 1
            let line = String(decoding: raw, as: UTF8.self).trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]"), line.dropFirst().hasPrefix("destination ") else {
                    problem(n, "expected '[destination PATTERN]', a section for the destinations matching PATTERN")
                    // What follows belongs to no section it could apply to: kept apart.
                    contents.sections.append(Section(pattern: "", line: n))
                    continue
                }
                let pattern = String(line.dropFirst("[destination ".count).dropLast()).trimmingSpaces()
                if pattern.isEmpty { problem(n, "the section names no destination pattern") }
                contents.sections.append(Section(pattern: pattern, line: n))
                continue
            }
            guard let eq = line.firstIndex(of: "=") else {
                problem(n, "expected 'key = value'")
                continue
            }
            let key = String(line[..<eq]).trimmingSpaces()
            let value = Value(text: String(line[line.index(after: eq)...]).trimmingSpaces(), line: n)
            let inSection = !contents.sections.isEmpty
            guard (inSection ? sectionKeys : keys).contains(key) else {
                if inSection && keys.contains(key) {
                    problem(n, "'\(key)' cannot be set per destination; in a [destination] section: \(sectionKeys.sorted().joined(separator: ", "))")
                } else {
                    let near = ParameterSpelling.nearest(key, in: (inSection ? sectionKeys : keys).sorted())
                    problem(n, "unknown key '\(key)'" + (near.map { " (did you mean '\($0)'?)" } ?? "") + "; known keys: \((inSection ? sectionKeys : keys).sorted().joined(separator: ", "))")
                }
                continue
            }
            let earlier = inSection ? contents.sections[contents.sections.count - 1].values[key] : contents.values[key]
            if let earlier { problem(n, "'\(key)' is set again: this line wins over line \(earlier.line)", error: false) }
            if inSection {
                contents.sections[contents.sections.count - 1].values[key] = value
            } else {
                contents.values[key] = value
            }
        }
        contents.sections.removeAll { $0.pattern.isEmpty }
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
