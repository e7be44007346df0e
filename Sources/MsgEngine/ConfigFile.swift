#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// The config file: `key = value` lines, `#` comments. Keys: `store`, `transport`,
/// `plugin_path`, `listen`. Values may use `$MSG_HOME`, `$HOME` and a leading `~/`
/// (also right after a scheme: `sqlite:~/q.db`).
///
/// Read from `--config`/`MSG_CONFIG` (which must exist), else
/// `$XDG_CONFIG_HOME/msg/config` or `~/.config/msg/config` when present.
enum ConfigFile {
    static let keys: Set<String> = ["store", "transport", "plugin_path", "listen"]

    /// - Throws: `config` for a missing explicit file, an unreadable one or a bad line.
    static func load(explicit: String?, env: (String) -> String?) throws(MsgError) -> [String: String] {
        let path: String
        if let explicit {
            path = explicit
        } else if let xdg = env("XDG_CONFIG_HOME") {
            path = xdg + "/msg/config"
        } else if let home = env("HOME") {
            path = home + "/.config/msg/config"
        } else {
            return [:]
        }
        let text: String
        do throws(MsgError) {
            text = try readText(path)
        } catch {
            let cause = error.underlying as? Errno
            if explicit == nil, cause?.rawValue == ENOENT { return [:] }
            throw MsgError(.config, "cannot read config file \(path): \(cause?.description ?? error.message)", underlying: cause)
        }
        var values: [String: String] = [:]
        // Lines split as bytes: "\r\n" is one Character in Swift, not "\n".
        for (i, raw) in text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            let line = String(decoding: raw, as: UTF8.self).trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let eq = line.firstIndex(of: "=") else {
                throw MsgError(.config, "\(path) line \(i + 1): expected 'key = value'")
            }
            let key = String(line[..<eq]).trimmingSpaces()
            guard keys.contains(key) else {
                throw MsgError(.config, "\(path) line \(i + 1): unknown key '\(key)'; known keys: \(keys.sorted().joined(separator: ", "))")
            }
            values[key] = String(line[line.index(after: eq)...]).trimmingSpaces()
        }
        return values
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
