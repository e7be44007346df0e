import MsgEngine
import MsgKit
import Synchronization
import Testing

@Suite struct UUIDv7Tests {
    @Test func idsIncreaseStrictlyAndHaveVersionAndVariant() {
        let g = UUIDv7Generator()
        var last = ""
        for _ in 0..<50_000 {
            let id = g.next()
            #expect(UUIDText.isCanonical(id))
            #expect(id > last, "\(id) after \(last)")
            let chars = Array(id)
            #expect(chars[14] == "7")
            #expect("89ab".contains(chars[19]))
            last = id
        }
    }

    @Test func monotonicWhenTheClockStandsStillOrGoesBack() {
        let times = LockedTimes([1000, 1000, 1000, 999, 500, 1001])
        let g = UUIDv7Generator(clock: { times.next() })
        var ids: [String] = []
        for _ in 0..<6 { ids.append(g.next()) }
        #expect(ids == ids.sorted())
        #expect(Set(ids).count == 6)
        // More than 4096 ids in one millisecond still increase.
        let frozen = UUIDv7Generator(clock: { 42 })
        var prev = ""
        for _ in 0..<10_000 {
            let id = frozen.next()
            #expect(id > prev)
            prev = id
        }
    }

    @Test func timestampIsTheMillisecondPrefix() {
        let g = UUIDv7Generator(clock: { 0x0123_4567_89AB })
        #expect(g.next().hasPrefix("01234567-89ab-7"))
    }
}

/// A clock for tests that returns fixed times in turn.
final class LockedTimes: Sendable {
    private let values: [Int64]
    private let index = TimesIndex()
    init(_ values: [Int64]) { self.values = values }
    func next() -> Int64 { values[min(index.increment() - 1, values.count - 1)] }
}

final class TimesIndex: Sendable {
    private let value = Mutex(0)
    func increment() -> Int { value.withLock { $0 += 1; return $0 } }
}
