#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// A point in time with millisecond precision, written as RFC 3339 UTC with
/// milliseconds: `2026-11-22T13:08:00.123Z`.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    public var milliseconds: Int64

    /// Wraps milliseconds since the Unix epoch.
    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    /// The current wall-clock time.
    public static func now() -> Timestamp {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Timestamp(milliseconds: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000)
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.milliseconds < b.milliseconds }

    /// This time moved by `duration`, kept within years 1 to 9999 (what RFC 3339
    /// writes): a duration from the network (a receiver's `retry_after`) never
    /// overflows.
    public func adding(_ duration: MsgDuration) -> Timestamp {
        let (sum, overflow) = milliseconds.addingReportingOverflow(duration.milliseconds)
        if overflow { return duration.milliseconds > 0 ? .latest : .earliest }
        return Timestamp(milliseconds: min(max(sum, Self.earliest.milliseconds), Self.latest.milliseconds))
    }

    /// 9999-12-31T23:59:59.999Z, the latest time a record can hold.
    public static let latest = Timestamp(milliseconds: 253_402_300_799_999)
    /// 0001-01-01T00:00:00.000Z, the earliest.
    public static let earliest = Timestamp(milliseconds: -62_135_596_800_000)

    /// The RFC 3339 text, UTC, always with three fraction digits.
    public var description: String {
        var out: [UInt8] = []
        out.reserveCapacity(24)
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the RFC 3339 text (24 bytes, no quotes) to `out` without allocating.
    public func write(to out: inout [UInt8]) {
        let days = milliseconds >= 0 ? milliseconds / 86_400_000 : (milliseconds - 86_399_999) / 86_400_000
        let msOfDay = milliseconds - days * 86_400_000
        let (y, m, d) = Self.civil(fromDays: days)
        let secondOfDay = msOfDay / 1000
        let zero = UInt8(ascii: "0")
        @inline(__always) func two(_ v: Int64) {
            out.append(zero + UInt8(truncatingIfNeeded: v / 10 % 10))
            out.append(zero + UInt8(truncatingIfNeeded: v % 10))
        }
        let year = max(0, min(9999, y))
        two(year / 100); two(year % 100); out.append(UInt8(ascii: "-"))
        two(m); out.append(UInt8(ascii: "-")); two(d); out.append(UInt8(ascii: "T"))
        two(secondOfDay / 3600); out.append(UInt8(ascii: ":"))
        two(secondOfDay / 60 % 60); out.append(UInt8(ascii: ":"))
        two(secondOfDay % 60); out.append(UInt8(ascii: "."))
        let ms = msOfDay % 1000
        out.append(zero + UInt8(truncatingIfNeeded: ms / 100))
        two(ms % 100)
        out.append(UInt8(ascii: "Z"))
    }

    /// Parses RFC 3339 (`2026-11-22T13:08:00Z`, `…:00.123456+01:00`, `t`/`z` or a space
    /// separator). Fractions beyond milliseconds are truncated. Returns nil when invalid.
    public init?(rfc3339 text: String) {
        var text = text
        guard let parsed = text.withUTF8({ Self.parse(rfc3339: $0) }) else { return nil }
        self = parsed
    }

    static func parse(rfc3339 b: UnsafeBufferPointer<UInt8>) -> Timestamp? {
        guard b.count >= 20 else { return nil }
        func num(_ start: Int, _ count: Int) -> Int64? {
            guard start + count <= b.count else { return nil }
            var v: Int64 = 0
            for i in start..<start + count {
                let d = b[i] &- UInt8(ascii: "0")
                guard d < 10 else { return nil }
                v = v * 10 + Int64(d)
            }
            return v
        }
        guard let year = num(0, 4), b[4] == UInt8(ascii: "-"), let month = num(5, 2), b[7] == UInt8(ascii: "-"),
              let day = num(8, 2), [UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")].contains(b[10]),
              let hour = num(11, 2), b[13] == UInt8(ascii: ":"), let minute = num(14, 2), b[16] == UInt8(ascii: ":"),
              let second = num(17, 2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
              hour < 24, minute < 60, second < 61 else { return nil }
        var i = 19
        var fraction: Int64 = 0
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            var digits = 0
            while i < b.count, b[i] &- UInt8(ascii: "0") < 10 {
                if digits < 3 { fraction = fraction * 10 + Int64(b[i] - UInt8(ascii: "0")) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 3) { fraction *= 10 }
        }
        guard i < b.count else { return nil }
        var offsetMinutes: Int64 = 0
        if b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z") {
            i += 1
        } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            guard let oh = num(i + 1, 2), i + 3 < b.count, b[i + 3] == UInt8(ascii: ":"), let om = num(i + 4, 2),
                  oh < 24, om < 60 else { return nil }
            offsetMinutes = (oh * 60 + om) * (b[i] == UInt8(ascii: "-") ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = days(fromCivil: year, month, day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offsetMinutes * 60
        return Timestamp(milliseconds: seconds * 1000 + fraction)
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's days_from_civil / civil_from_days.
    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Year, month (1-12) and day of the day `z0` days after 1970-01-01 (proleptic Gregorian).
    public static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
