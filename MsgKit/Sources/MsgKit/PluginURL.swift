/// A store or transport address: `sqlite:PATH`, `json:PATH`, `file:DIR`,
/// `tcp://HOST:PORT`, `stdout:?fail=0.2&seed=7`.
///
/// The scheme picks the plugin; the rest is the plugin's to read. Query
/// parameters configure it.
public struct PluginURL: Sendable, Equatable, CustomStringConvertible {
    /// The whole text as given.
    public let text: String
    /// The scheme, lower-case (`sqlite`).
    public let scheme: String
    /// What follows `//` up to the next `/` or `?` (`127.0.0.1:7000`), if the URL has `//`.
    public let authority: String?
    /// The path (`/var/lib/msg/queue.sqlite`), percent-decoded; may be empty.
    public let path: String
    /// The query parameters in order, percent-decoded.
    public let parameters: [(name: String, value: String)]

    public var description: String { text }

    /// Parses `text`. - Throws: `MsgError.config` when there is no scheme.
    public init(_ text: String) throws(MsgError) {
        self.text = text
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex,
              text[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") })
        else {
            throw MsgError(.config, "'\(text)' is not a store or transport URL; write SCHEME:..., e.g. sqlite:/path/queue.sqlite or file:/path/outbox")
        }
        scheme = text[..<colon].lowercased()
        var rest = Substring(text[text.index(after: colon)...])
        var query = Substring("")
        if let q = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: q)...]
            rest = rest[..<q]
        }
        if rest.hasPrefix("//") {
            let afterSlashes = rest.dropFirst(2)
            let end = afterSlashes.firstIndex(of: "/") ?? afterSlashes.endIndex
            authority = String(afterSlashes[..<end])
            rest = afterSlashes[end...]
        } else {
            authority = nil
        }
        path = Self.percentDecode(rest)
        parameters = query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            if let eq = pair.firstIndex(of: "=") {
                return (Self.percentDecode(pair[..<eq]), Self.percentDecode(pair[pair.index(after: eq)...]))
            }
            return (Self.percentDecode(pair), "")
        }
    }

    /// The last value of parameter `name`.
    public func parameter(_ name: String) -> String? {
        parameters.last(where: { $0.name == name })?.value
    }

    public static func == (a: PluginURL, b: PluginURL) -> Bool { a.text == b.text }

    private static func percentDecode(_ s: Substring) -> String {
        guard s.contains("%") || s.contains("+") else { return String(s) }
        var out: [UInt8] = []
        var bytes = Array(s.utf8)[...]
        while let b = bytes.popFirst() {
            if b == UInt8(ascii: "%"), bytes.count >= 2,
               let hi = hex(bytes[bytes.startIndex]), let lo = hex(bytes[bytes.startIndex + 1]) {
                out.append(hi << 4 | lo)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return b - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
