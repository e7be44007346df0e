import MsgEngine
import MsgKit
import MsgKitTesting
import Testing

/// ``KeyScheduler`` alone: claimed messages in, slices out, no store, no transport
/// and no worker thread (a take is only asked for when something can be taken, or
/// after close, so none waits).
@Suite struct KeySchedulerTests {
    /// Claimed messages for `keys`, one each, numbered in claim order.
    static func claimed(_ keys: [String]) -> [KeyScheduler.Item] {
        keys.enumerated().map { i, key in
            let r = EncodedMessage(Fixtures.message(i, to: key))
            return KeyScheduler.Item(record: r, original: r, key: key, probe: false)
        }
    }

    @Test func oneWorkerTakesInClaimOrderUpToTheSize() {
        let s = KeyScheduler(workers: 1)
        let items = Self.claimed(["a", "b", "a", "c", "b"])
        s.add(items)
        let first = s.take(size: 3, parallelism: 1)
        #expect(first?.map(\.record) == items[0..<3].map(\.record), "the oldest three, a destination's in order")
        #expect(s.take(size: 10, parallelism: 1)?.map(\.record) == items[3...].map(\.record))
        s.close()
        #expect(s.take(size: 1, parallelism: 1) == nil, "closed: no more slices")
    }

    /// A transport with several in flight in one call gets one message per
    /// destination in a slice: never two of one destination at once.
    @Test func aCallWithSeveralInFlightHoldsOneMessagePerDestination() {
        let s = KeyScheduler(workers: 1)
        let items = Self.claimed(["a", "a", "b", "a", "c"])
        s.add(items)
        #expect(s.take(size: 10, parallelism: 8)?.map(\.key) == ["a", "b", "c"])
        #expect(s.take(size: 10, parallelism: 8)?.map(\.record) == [items[1].record])
        #expect(s.take(size: 10, parallelism: 8)?.map(\.record) == [items[3].record], "a's in claim order")
    }

    /// A destination that failed lately goes one message a slice, so that its
    /// breaker sees each outcome; the others go as before.
    @Test func aCautiousDestinationGoesOneMessageASlice() {
        let s = KeyScheduler(workers: 1)
        let items = Self.claimed(["a", "a", "b", "b", "a"])
        s.setCautious("a", true)
        s.add(items)
        #expect(s.take(size: 10, parallelism: 1)?.map(\.record) == [items[0], items[2], items[3]].map(\.record))
        s.setCautious("a", false)
        #expect(s.take(size: 10, parallelism: 1)?.map(\.record) == [items[1], items[4]].map(\.record), "recovered: the rest at once")
    }

    /// One worker: a destination whose slice failed is held until its outcomes are
    /// recorded; what waits for it stays, in order, and the others go.
    @Test func aHeldDestinationWaitsUntilDone() {
        let s = KeyScheduler(workers: 1)
        let items = Self.claimed(["a", "b", "a"])
        s.add(items)
        s.finished(["a", "b"], failed: ["a"])
        #expect(s.take(size: 10, parallelism: 1)?.map(\.key) == ["b"])
        s.done(["a"])
        #expect(s.take(size: 10, parallelism: 1)?.map(\.record) == [items[0], items[2]].map(\.record))
    }

    /// Several workers: a slice holds its share of the waiting destinations, and
    /// each destination it holds is held from the others until done.
    @Test func sharedWorkersEachHoldTheirDestinations() {
        let s = KeyScheduler(workers: 2)
        #expect(s.shared)
        let items = Self.claimed(["a", "b", "c", "d", "a", "b"])
        s.add(items)
        let first = s.take(size: 10, parallelism: 1) ?? []
        #expect(Set(first.map(\.key)) == ["a", "b"], "its share: half of four destinations, the oldest")
        #expect(first.map(\.record) == [items[0], items[1], items[4], items[5]].map(\.record), "each one's messages in order")
        s.add(Self.claimed(["a"]))
        let second = s.take(size: 10, parallelism: 1) ?? []
        #expect(Set(second.map(\.key)) == ["c"], "a and b are held by the first worker; c is half of c and d")
        s.done(["a", "b"])
        #expect(Set((s.take(size: 10, parallelism: 1) ?? []).map(\.key)) == ["d"], "half of d and a, the oldest first")
        #expect((s.take(size: 10, parallelism: 1) ?? []).map(\.key) == ["a"], "a, free again")
    }

    /// A destination whose breaker opened gives back what waits for it, in order;
    /// at the end of a run everything waiting comes back.
    @Test func withdrawGivesBackWhatWaits() {
        let s = KeyScheduler(workers: 1)
        let items = Self.claimed(["a", "b", "a", "c"])
        s.add(items)
        #expect(s.withdraw("a").map(\.record) == [items[0], items[2]].map(\.record))
        #expect(s.withdrawAll().map(\.record) == [items[1], items[3]].map(\.record))
        s.add(Self.claimed(["z"]))
        #expect(s.take(size: 10, parallelism: 1)?.map(\.key) == ["z"], "nothing withdrawn is handed out")
    }
}
