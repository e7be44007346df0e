import ArgumentParser
import MsgKit

/// `--header key=value` arguments, as `compose` and `queue edit` take them.
enum HeaderArguments {
    /// Refuses a header without `=` or without a key.
    static func validate(_ headers: [String]) throws {
        for h in headers where !h.contains("=") || h.hasPrefix("=") {
            throw ValidationError("--header needs key=value, got '\(h)'")
        }
    }

    /// Splits validated headers at their first `=`.
    static func pairs(_ headers: [String]) -> Headers {
        Headers(headers.map { h in
            let eq = h.firstIndex(of: "=") ?? h.endIndex
            return (key: String(h[..<eq]), value: eq == h.endIndex ? "" : String(h[h.index(after: eq)...]))
        })
    }
}
