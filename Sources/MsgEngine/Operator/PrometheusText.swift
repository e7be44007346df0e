/// Writes metrics in the Prometheus text exposition format (version 0.0.4): a
/// `# HELP` and `# TYPE` line per family, then its samples, label values escaped
/// (backslash, double quote, newline). Small enough to write here: `msg metrics`
/// prints gauges read from the store once, which needs no registry, and
/// swift-prometheus would add a package and start-up to every msg command.
public struct PrometheusText {
    public private(set) var text = ""

    public init() {}

    public enum Kind: String { case gauge, counter, histogram }

    /// Starts a family.
    public mutating func family(_ name: String, _ kind: Kind, help: String) {
        text += "# HELP \(name) \(Self.escapedHelp(help))\n# TYPE \(name) \(kind.rawValue)\n"
    }

    /// One sample of the current family.
    public mutating func sample(_ name: String, _ labels: [(String, String)] = [], _ value: Double) {
        text += name
        if !labels.isEmpty {
            text += "{" + labels.map { "\($0.0)=\"\(Self.escapedLabel($0.1))\"" }.joined(separator: ",") + "}"
        }
        text += " " + Self.number(value) + "\n"
    }

    /// A histogram from upper bounds and the observations' counts per bucket (not
    /// cumulative; the last one is +Inf), their sum and labels.
    public mutating func histogram(_ name: String, bounds: [Double], counts: [Int], sum: Double, labels: [(String, String)] = []) {
        var cumulative = 0
        for (i, bound) in (bounds + [Double.infinity]).enumerated() {
            cumulative += i < counts.count ? counts[i] : 0
            sample(name + "_bucket", labels + [("le", bound.isInfinite ? "+Inf" : Self.number(bound))], Double(cumulative))
        }
        sample(name + "_sum", labels, sum)
        sample(name + "_count", labels, Double(cumulative))
    }

    static func number(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v > 0 ? "+Inf" : "-Inf" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return String(v)
    }

    static func escapedLabel(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    static func escapedHelp(_ s: String) -> String {
        s.replacingAll("\\", "\\\\").replacingAll("\n", "\\n")
    }
}

private extension String {
    func replacingAll(_ a: Character, _ b: String) -> String {
        var out = ""
        for c in self { if c == a { out += b } else { out.append(c) } }
        return out
    }
}
