/// The parameters of a query string or a form body (`a=1&b=x%20y`), decoded.
struct WebQuery {
    private(set) var pairs: [(name: String, value: String)] = []

    init(_ text: String) {
        for part in text.split(separator: "&", omittingEmptySubsequences: true) {
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            pairs.append((Self.decode(kv[0]), kv.count > 1 ? Self.decode(kv[1]) : ""))
        }
    }

    init(pairs: [(String, String)]) { self.pairs = pairs.map { (name: $0.0, value: $0.1) } }

    /// The first value of `name`, nil when absent or empty.
    subscript(_ name: String) -> String? {
        pairs.first { $0.name == name && !$0.value.isEmpty }?.value
    }

    /// The pairs with `name` set to `value` (removed when nil), as a query string.
    func with(_ name: String, _ value: String?) -> String {
        var kept = pairs.filter { $0.name != name && !$0.value.isEmpty }
        if let value { kept.append((name, value)) }
        return Self.encode(kept)
    }

    /// `+` and `%XX` decoded; a bad escape kept as it is.
    static func decode(_ s: Substring) -> String {
        var bytes: [UInt8] = []
        var u = Array(s.utf8)[...]
        while let b = u.popFirst() {
            if b == UInt8(ascii: "+") {
                bytes.append(0x20)
            } else if b == UInt8(ascii: "%"), u.count >= 2, let v = UInt8(String(decoding: u.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(v)
                u = u.dropFirst(2)
            } else {
                bytes.append(b)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Pairs as a query string, every byte but unreserved ones percent-encoded.
    static func encode(_ pairs: [(name: String, value: String)]) -> String {
        pairs.map { component($0.name) + "=" + component($0.value) }.joined(separator: "&")
    }

    static func component(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                let hex = String(b, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" : "") + hex
            }
        }
        return out
    }
}
