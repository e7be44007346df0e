import MsgKit

/// Records for conformance scenarios: fixed times, distinct ids, unknown fields.
public enum Fixtures {
    /// A fixed time: 2026-11-22T13:08:00.000Z.
    public static let t0 = Timestamp(milliseconds: 1_795_352_880_000)

    /// A queued record `n` created at `t0 + createdOffset` ms, with an extra field.
    public static func message(_ n: Int, to: String = "bob", createdOffset: Int64 = 0) -> Message {
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<12 { bytes[i] = UInt8(i) }
        for i in 12..<16 { bytes[i] = UInt8(truncatingIfNeeded: n >> (8 * (15 - i))) }
        bytes[6] = 0x70
        bytes[8] = 0x80
        let id = UUIDText.format(bytes)
        var m = Message(id: id, to: to, body: "body \(n) ünïcødé \"quoted\"\nline",
                        headers: [("x-seq", String(n))], now: t0.adding(MsgDuration(milliseconds: createdOffset)))
        let tags: JSONValue = .array([.string("a"), .null])
        let pipeline: JSONValue = .object([JSONValue.Member("stage", .number("1.50")), JSONValue.Member("tags", tags)])
        m.extra = [JSONValue.Member("pipeline", pipeline)]
        return m
    }
}
