import MsgKit
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
