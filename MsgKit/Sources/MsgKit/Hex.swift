import CCrypto

/// Lower-case hexadecimal.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out: [UInt8] = []
        Array(bytes).withUnsafeBufferPointer { write($0, to: &out) }
        return String(decoding: out, as: UTF8.self)
    }

    /// Nil for an odd length or a character that is not a hex digit.
    public static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decode($0) }
    }

    /// Appends the hex of `bytes` to `out` (ABI 9.2: a store's `$ledger` lines, with
    /// no string made for each).
    public static func write(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: bytes.count * 2))
        out.withUnsafeMutableBufferPointer { o in
            for (i, b) in bytes.enumerated() {
                o[start + 2 * i] = digits[Int(b >> 4)]
                o[start + 2 * i + 1] = digits[Int(b & 15)]
            }
        }
    }

    /// The bytes the hex digits `u` spell; nil for an odd length or a character
    /// that is not a hex digit (ABI 9.2).
    public static func decode(_ u: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard u.count % 2 == 0 else { return nil }
        var valid = true
        let out = [UInt8](unsafeUninitializedCapacity: u.count / 2) { buffer, count in
            for i in 0..<buffer.count {
                let hi = values[Int(u[2 * i])], lo = values[Int(u[2 * i + 1])]
                if hi > 15 || lo > 15 {
                    valid = false
                    break
                }
                buffer[i] = hi << 4 | lo
            }
            count = valid ? buffer.count : 0
        }
        return valid ? out : nil
    }

    /// Each byte's value as a hex digit, 255 where it is none.
    private static let values: [UInt8] = (0...255).map { (c: Int) -> UInt8 in
        switch c {
        case 48...57: UInt8(c - 48)
        case 97...102: UInt8(c - 87)
        case 65...70: UInt8(c - 55)
        default: 255
        }
    }
}
