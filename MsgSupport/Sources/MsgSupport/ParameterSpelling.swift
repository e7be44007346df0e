/// The parameter a misspelt one was nearly: a URL's unknown parameter is refused
/// naming it (`signing_secret_flie` would otherwise send a webhook unsigned).
public enum ParameterSpelling {
    /// The first of `names` within two edits of `name` (case aside), or nil.
    public static func nearest(_ name: String, in names: [String]) -> String? {
        let lowered = name.lowercased()
        return names.first { editDistance($0, lowered) <= 2 }
    }

    /// Levenshtein distance, for short parameter names.
    public static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8), b = Array(b.utf8)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var row = Array(0...b.count)
        for i in 1...a.count {
            var previous = row[0]
            row[0] = i
            for j in 1...b.count {
                let current = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return row[b.count]
    }
}
