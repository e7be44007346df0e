/// Appends compact JSON text to a byte buffer.
///
/// The single place where msg turns values into JSON: one configuration, no
/// whitespace, `/` not escaped, non-ASCII written as UTF-8, control characters as
/// `\uXXXX`.
public struct JSONWriter {
    /// The bytes written so far.
    public var bytes: [UInt8]

    /// Starts an empty buffer with room for `capacity` bytes.
    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Appends raw bytes (already valid JSON or a separator).
    @inlinable public mutating func raw(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends a JSON value.
    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: raw("null")
        case .bool(let b): b ? raw("true") : raw("false")
        case .number(let text): bytes.append(contentsOf: text.utf8)
        case .string(let s): string(s)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                self.value(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            for (i, member) in members.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                string(member.key)
                bytes.append(UInt8(ascii: ":"))
                self.value(member.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Appends a quoted, escaped JSON string.
    public mutating func string(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { utf8 in
            var runStart = 0
            for i in 0..<utf8.count {
                let byte = utf8[i]
                if byte >= 0x20 && byte != 0x22 && byte != 0x5C { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i]))
                runStart = i + 1
                switch byte {
                case 0x22: raw("\\\"")
                case 0x5C: raw("\\\\")
                case 0x0A: raw("\\n")
                case 0x0D: raw("\\r")
                case 0x09: raw("\\t")
                case 0x08: raw("\\b")
                case 0x0C: raw("\\f")
                default:
                    raw("\\u00")
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    bytes.append(hex[Int(byte >> 4)])
                    bytes.append(hex[Int(byte & 0xF)])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<utf8.count]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends `"key":` (with a leading comma unless `first`).
    public mutating func key(_ key: StaticString, first: Bool = false) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        raw(key)
        raw("\":")
    }

    /// Appends a time as a quoted RFC 3339 string.
    public mutating func timestamp(_ t: Timestamp) {
        bytes.append(UInt8(ascii: "\""))
        t.write(to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends an integer.
    public mutating func int(_ n: Int) {
        bytes.append(contentsOf: String(n).utf8)
    }
}
