import MsgKit

/// `msg config`: the settings in effect, in the config file's own form (as
/// Postfix's `postconf`), each key with what set it: a flag, a variable, the config
/// file and its line, or the default; then the `--route`s and the file's
/// `[destination PATTERN]` sections, in the order they are matched. A secret in a
/// URL (a password, a token or key parameter) is shown as `***`.
public enum ConfigReport {
    public static func text(_ s: Settings) -> String {
        let c = s.configured
        var out = "# config file: " + (s.configPath ?? "none (the defaults apply)") + "\n"
        func row(_ key: String, _ value: String, _ origin: String) {
            let line = "\(key) = \(value)"
            out += line + String(repeating: " ", count: max(1, 40 - line.count)) + " # \(origin)\n"
        }
        func fileOrDefault(_ key: String, _ lines: [String: Int]) -> String {
            lines[key].map { "\(s.configPath ?? "") line \($0)" } ?? "default"
        }
        row("home", s.home, s.origins["home"] ?? "default")
        for (key, value) in [("store", s.store), ("transport", s.transport), ("plugin_path", s.pluginPath.joined(separator: ":")),
                             ("listen", s.listen ?? "")] {
            row(key, redacted(value), s.origins[key] ?? "default")
        }
        let p = s.retry
        let cooldown = c.breakerCooldown?.description ?? "30s (the backoff cap when shorter)"
        for (key, value) in [("max_attempts", String(p.maxAttempts)), ("backoff_base", p.base.description),
                             ("backoff_cap", p.cap.description), ("give_up_after", p.giveUpAfter.description),
                             ("deadline", (c.deadline ?? .seconds(3)).description), ("concurrency", String(c.concurrency ?? 1)),
                             ("rate", c.rate?.description ?? "none"), ("burst", String(c.burst ?? 1)),
                             ("breaker", String(c.breaker ?? 5)), ("breaker_cooldown", cooldown)] {
            row(key, value, fileOrDefault(key, c.lines))
        }
        for section in s.sections {
            out += "\n[destination \(section.pattern)]" + (section.line > 0 ? "  # line \(section.line)" : "  # --route") + "\n"
            let v = section.values
            let values: [(String, String?)] = [
                ("transport", v.transport.map(redacted)), ("max_attempts", v.maxAttempts.map(String.init)),
                ("backoff_base", v.backoffBase?.description), ("backoff_cap", v.backoffCap?.description),
                ("give_up_after", v.giveUpAfter?.description), ("deadline", v.deadline?.description),
                ("concurrency", v.concurrency.map(String.init)), ("rate", v.rate?.description), ("burst", v.burst.map(String.init)),
                ("breaker", v.breaker.map(String.init)), ("breaker_cooldown", v.breakerCooldown?.description),
            ]
            for case let (key, value?) in values {
                var origin = section.line > 0 ? v.lines[key].map { "line \($0)" } ?? "" : "--route"
                if key == "transport", section.line > 0, s.routeOverride != nil { origin += "; replaced for this run by \(s.origins["transport"] ?? "")" }
                row(key, value, origin)
            }
        }
        return out
    }

    /// `url` with its password and any token, secret, password or key parameter as `***`.
    public static func redacted(_ url: String) -> String {
        var text = url
        if let scheme = text.firstRange(of: "://") {
            let rest = text[scheme.upperBound...]
            let end = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
            if let at = rest[..<end].lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") {
                text = String(text[..<rest.index(after: colon)]) + "***" + text[at...]
            }
        }
        guard let q = text.firstIndex(of: "?") else { return text }
        let params = text[text.index(after: q)...].split(separator: "&", omittingEmptySubsequences: false).map { p -> String in
            let raw = String(p.prefix { $0 != "=" })
            let name = raw.lowercased()
            let secret = ["token", "secret", "password", "key"].contains { name.contains($0) } && !name.hasSuffix("_file")
            return secret && p.contains("=") ? raw + "=***" : String(p)
        }
        return String(text[...q]) + params.joined(separator: "&")
    }
}
