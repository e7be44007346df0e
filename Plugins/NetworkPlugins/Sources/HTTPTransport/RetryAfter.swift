/// The `Retry-After` header (RFC 9110 10.2.3): a number of seconds, or an HTTP date
/// in any of the three forms a recipient must accept (IMF-fixdate
/// `Sun, 06 Nov 1994 08:49:37 GMT`, RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT`,
/// asctime `Sun Nov  6 08:49:37 1994`).
///
/// The value comes from the network: every step is checked arithmetic, and a
/// value out of range (a year such as 1000000000) is "no usable Retry-After",
/// never a crash.
enum RetryAfter {
    /// The longest wait honoured; a larger one is taken as this.
    static let longest: Int64 = 86_400_000

    /// The years a date may name: HTTP dates are four digits (RFC 9110 5.6.7).
    static let years = 1..<10_000

    /// The wait in milliseconds from `now` (Unix milliseconds), or nil when `text`
    /// is neither form or names a time out of range. A date in the past is no wait.
    static func milliseconds(_ text: String, now: Int64) -> Int64? {
        let trimmed = text.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }) {
            // All digits: a number too large for Int64 is still "a very long wait".
            guard let seconds = Int64(trimmed) else { return longest }
            return min(seconds, longest / 1000) * 1000
        }
        guard let at = httpDate(trimmed) else { return nil }
        let (ms, overflow) = at.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return nil }
        let (wait, under) = ms.subtractingReportingOverflow(now)
        guard !under else { return nil }
        return min(max(0, wait), longest)
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Unix seconds of an HTTP date, blanks already collapsed to one space; nil when
    /// it does not read or its year is outside ``years``.
    static func httpDate(_ text: String) -> Int64? {
        let words = text.split(separator: " ").map(String.init)
        var day: Int?, month: Int?, year: Int?, clock: String?
        if words.count == 6, words[0].hasSuffix(","), words[5] == "GMT" {          // IMF-fixdate
            (day, month, year, clock) = (Int(words[1]), monthNumber(words[2]), Int(words[3]), words[4])
        } else if words.count == 4, words[0].hasSuffix(","), words[3] == "GMT" {   // RFC 850
            let parts = words[1].split(separator: "-").map(String.init)
            guard parts.count == 3, let yy = Int(parts[2]) else { return nil }
            (day, month, year, clock) = (Int(parts[0]), monthNumber(parts[1]), yy < 70 ? 2000 + yy : (yy < 100 ? 1900 + yy : yy), words[2])
        } else if words.count == 5 {                                                 // asctime
            (day, month, year, clock) = (Int(words[2]), monthNumber(words[1]), Int(words[4]), words[3])
        }
        guard let day, let month, let year, let clock, (1...31).contains(day), years.contains(year) else { return nil }
        let hms = clock.split(separator: ":").compactMap { Int($0) }
        guard hms.count == 3, (0...23).contains(hms[0]), (0...59).contains(hms[1]), (0...60).contains(hms[2]) else { return nil }
        // In range now: a year below 10,000 is about 3.7 million days.
        return daysFromCivil(year: year, month: month, day: day) * 86_400 + Int64(hms[0] * 3600 + hms[1] * 60 + hms[2])
    }

    private static func monthNumber(_ name: String) -> Int? {
        months.firstIndex(of: name.lowercased()).map { $0 + 1 }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
    /// algorithm), for a year in ``years``.
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let m = Int64(month)
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
