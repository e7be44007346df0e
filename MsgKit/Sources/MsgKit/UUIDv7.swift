import Synchronization

/// Makes UUIDv7 identifiers (RFC 9562), lower-case, strictly increasing for one generator.
///
/// Layout: 48 bits of Unix milliseconds, the version, 12 bits of counter
/// (RFC 9562 6.2 method 1, seeded at random each millisecond), the variant and 62
/// random bits. When more than 4,096 ids are made in one millisecond or the clock
/// steps back, the timestamp is carried forward, so ids never go backwards.
public final class UUIDv7Generator: Sendable {
    private struct State {
        var lastMillis: Int64 = 0
        var counter: UInt16 = 0
    }

    private let state = Mutex(State())
    private let clock: @Sendable () -> Int64

    /// A generator on the wall clock, or on `clock` (milliseconds) in tests.
    public init(clock: @escaping @Sendable () -> Int64 = { Timestamp.now().milliseconds }) {
        self.clock = clock
    }

    /// The next id.
    public func next() -> String {
        var rng = SystemRandomNumberGenerator()
        let (millis, counter) = state.withLock { s -> (Int64, UInt16) in
            let now = clock()
            if now > s.lastMillis {
                s.lastMillis = now
                s.counter = UInt16.random(in: 0..<0x800, using: &rng)   // leave room to count up
            } else if s.counter < 0xFFF {
                s.counter += 1
            } else {
                s.lastMillis += 1
                s.counter = 0
            }
            return (s.lastMillis, s.counter)
        }
        let random = rng.next() as UInt64
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<6 { bytes[i] = UInt8(truncatingIfNeeded: UInt64(millis) >> (40 - 8 * UInt64(i))) }
        bytes[6] = 0x70 | UInt8(counter >> 8)
        bytes[7] = UInt8(truncatingIfNeeded: counter)
        for i in 8..<16 { bytes[i] = UInt8(truncatingIfNeeded: random >> (8 * UInt64(15 - i))) }
        bytes[8] = 0x80 | (bytes[8] & 0x3F)
        return UUIDText.format(bytes)
    }
}

/// Checks and formats UUID text.
public enum UUIDText {
    /// Formats 16 bytes as `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lower-case.
    public static func format(_ bytes: [UInt8]) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(36)
        for (i, byte) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(UInt8(ascii: "-")) }
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether `text` is a UUID in canonical form (8-4-4-4-12 hex digits, lower-case).
    /// Only such ids are ever used as file names.
    public static func isCanonical(_ text: String) -> Bool {
        let b = Array(text.utf8)
        guard b.count == 36 else { return false }
        for (i, c) in b.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                if c != UInt8(ascii: "-") { return false }
            } else if !((c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "f"))) {
                return false
            }
        }
        return true
    }
}
