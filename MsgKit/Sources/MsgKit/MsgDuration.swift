/// A length of time as users write it: `250ms`, `5s`, `2m`, `1h`, `7d`, or a sum
/// such as `1h30m`.
public struct MsgDuration: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The length in milliseconds (never negative).
    public var milliseconds: Int64

    /// Wraps a number of milliseconds.
    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    /// Seconds as a convenience.
    public static func seconds(_ s: Int64) -> MsgDuration { MsgDuration(milliseconds: s * 1000) }

    public static func < (a: MsgDuration, b: MsgDuration) -> Bool { a.milliseconds < b.milliseconds }

    private static let units: [(suffix: String, ms: Int64)] = [
        ("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000), ("w", 604_800_000),
    ]

    /// Parses a duration. - Throws: `MsgError.badInput` with a sentence saying what is accepted.
    public init(parsing text: String) throws(MsgError) {
        let bytes = Array(text.utf8)
        func invalid(_ why: String) -> MsgError {
            MsgError(.badInput, "invalid duration '\(text)': \(why); write a number and a unit (ms, s, m, h, d, w), e.g. 250ms, 5s, 2m, 1h, 7d, 2w")
        }
        guard !bytes.isEmpty else { throw invalid("it is empty") }
        var total: Int64 = 0
        var i = 0
        while i < bytes.count {
            var value: Int64 = 0
            let start = i
            while i < bytes.count, bytes[i] &- UInt8(ascii: "0") < 10 {
                let (product, overflow1) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = product.addingReportingOverflow(Int64(bytes[i] - UInt8(ascii: "0")))
                if overflow1 || overflow2 { throw invalid("it is too large") }
                value = sum
                i += 1
            }
            if i == start { throw invalid("expected a number at '\(String(decoding: bytes[i...], as: UTF8.self))'") }
            let unitStart = i
            while i < bytes.count, bytes[i] &- UInt8(ascii: "a") < 26 { i += 1 }
            let unit = String(decoding: bytes[unitStart..<i], as: UTF8.self)
            guard !unit.isEmpty else { throw invalid("the unit is missing") }
            guard let factor = Self.units.first(where: { $0.suffix == unit })?.ms else { throw invalid("unknown unit '\(unit)'") }
            let (part, overflow) = value.multipliedReportingOverflow(by: factor)
            if overflow || total > Int64.max - part { throw invalid("it is too large") }
            total += part
        }
        self.milliseconds = total
    }

    /// The shortest exact text in the largest unit that divides it: `1500ms`, `5s`, `2m`.
    public var description: String {
        for (suffix, ms) in Self.units.reversed() where milliseconds % ms == 0 && milliseconds != 0 {
            return "\(milliseconds / ms)\(suffix)"
        }
        return "0s"
    }
}
