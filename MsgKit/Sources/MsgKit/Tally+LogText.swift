/// A ``Tally`` as text, for a store that appends the deltas of each commit to a log
/// (the SQLite and PostgreSQL stores' `tally_log`): per figure its kind's letter,
/// `a` and `b` each as `<length in bytes>:<bytes>`, then the number and `;`. Plain
/// UTF-8 whatever the names hold, and texts joined end to end read as their sum.
extension Tally {
    /// The figures that are not zero, as log text (empty when there are none).
    public func logText(into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        func number(_ n: Int) {
            if n < 0 { out.append(UInt8(ascii: "-")) }
            var m = n.magnitude
            let start = out.count
            repeat {
                out.append(UInt8(48 + m % 10))
                m /= 10
            } while m > 0
            out[start...].reverse()
        }
        forEach { (key, n) in
            out.append(contentsOf: key.kind.rawValue.utf8)
            number(key.a.utf8.count); out.append(UInt8(ascii: ":")); out.append(contentsOf: key.a.utf8)
            number(key.b.utf8.count); out.append(UInt8(ascii: ":")); out.append(contentsOf: key.b.utf8)
            number(n); out.append(UInt8(ascii: ";"))
        }
    }

    /// The figures as log text.
    public var logText: String {
        var out: [UInt8] = []
        logText(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Adds the figures of log text; stops at the first thing it does not read.
    /// - Returns: whether it read the whole text.
    @discardableResult
    public mutating func add(logText text: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        func number(until end: UInt8) -> Int? {
            var n = 0, sign = 1, digits = 0
            if i < text.count, text[i] == UInt8(ascii: "-") { sign = -1; i += 1 }
            while i < text.count, text[i] != end {
                let d = Int(text[i]) - 48
                guard d >= 0, d <= 9, digits < 18 else { return nil }
                n = n * 10 + d
                digits += 1
                i += 1
            }
            guard i < text.count, digits > 0 else { return nil }
            i += 1
            return sign * n
        }
        func name() -> String? {
            guard let length = number(until: UInt8(ascii: ":")), length >= 0, i + length <= text.count else { return nil }
            defer { i += length }
            return String(decoding: UnsafeBufferPointer(rebasing: text[i..<i + length]), as: UTF8.self)
        }
        while i < text.count {
            guard let kind = Kind(rawValue: String(UnicodeScalar(text[i]))) else { return false }
            i += 1
            guard let a = name(), let b = name(), let n = number(until: UInt8(ascii: ";")) else { return false }
            add(n, to: Key(kind, a, b))
        }
        return true
    }
}
