/// Checks and formats UUID text.
public enum UUIDText {
    /// Formats 16 bytes as `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lower-case.
    public static func format(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { format($0) }
    }

    /// Whether `text` is a UUID in canonical form (8-4-4-4-12 hex digits, lower-case).
    /// Only such ids are ever used as file names.
    public static func isCanonical(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes($0) } != nil
    }

    /// Formats 16 bytes as ``format(_:)-([UInt8])`` does (plugin ABI 9.3).
    public static func format(_ bytes: UnsafeRawBufferPointer) -> String {
        let hex: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 2 * bytes.count + 4) { out in
            var at = 0
            for (i, byte) in bytes.enumerated() {
                if i == 4 || i == 6 || i == 8 || i == 10 {
                    out[at] = UInt8(ascii: "-")
                    at += 1
                }
                out[at] = hex.utf8Start[Int(byte >> 4)]
                out[at + 1] = hex.utf8Start[Int(byte & 0xF)]
                at += 2
            }
            return at
        }
    }

    /// The 16 bytes of a UUID in canonical form, in order (two big-endian words as
    /// they lie in memory); nil for any other text (plugin ABI 9.3).
    public static func bytes(_ text: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64)? {
        guard text.count == 36, let t = text.baseAddress,
              t[8] == UInt8(ascii: "-"), t[13] == UInt8(ascii: "-"), t[18] == UInt8(ascii: "-"), t[23] == UInt8(ascii: "-")
        else { return nil }
        var bad: UInt8 = 0
        // The digits at `from..<to` (between two dashes) appended to `v`, without a
        // branch on the digit: this runs for every leaf a store keeps.
        func digits(_ from: Int, _ to: Int, _ v: inout UInt64) {
            var i = from
            while i < to {
                let d = t[i] &- UInt8(ascii: "0")
                let x = t[i] &- UInt8(ascii: "a")
                let digit = d < 10
                bad |= digit || x < 6 ? 0 : 1
                v = v << 4 | UInt64(digit ? d : x &+ 10)
                i += 1
            }
        }
        var hi: UInt64 = 0
        var lo: UInt64 = 0
        digits(0, 8, &hi)
        digits(9, 13, &hi)
        digits(14, 18, &hi)
        digits(19, 23, &lo)
        digits(24, 36, &lo)
        return bad != 0 ? nil : (hi.bigEndian, lo.bigEndian)
    }
}
