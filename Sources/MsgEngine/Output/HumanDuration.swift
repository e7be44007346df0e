import MsgKit

/// A length of time as a person reads it in a sentence: `850 ms`, `4.2 s`,
/// `3 min 31 s`, `2 h 5 min`, `3 d 4 h`; two units at most, the second whole.
/// (``MsgDuration``'s own text is the exact one a setting is written in: `211155ms`.)
public enum HumanDuration {
    public static func text(_ d: MsgDuration) -> String { text(milliseconds: d.milliseconds) }

    public static func text(milliseconds ms: Int64) -> String {
        if ms < 1000 { return "\(max(0, ms)) ms" }
        if ms < 10_000 {
            let tenths = ms / 100
            return tenths % 10 == 0 ? "\(tenths / 10) s" : "\(tenths / 10).\(tenths % 10) s"
        }
        let s = ms / 1000
        if s < 60 { return "\(s) s" }
        for (big, bigName, small, smallName) in [(Int64(86_400), "d", Int64(3600), "h"), (3600, "h", 60, "min"), (60, "min", 1, "s")] where s >= big {
            let rest = (s % big) / small
            return rest == 0 ? "\(s / big) \(bigName)" : "\(s / big) \(bigName) \(rest) \(smallName)"
        }
        return "\(s) s"
    }
}
