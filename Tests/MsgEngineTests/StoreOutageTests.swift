import MsgKit
import MsgEngine
import Synchronization
import Testing

/// `flush --watch` riding out a store it cannot reach: the waits, the two lines, a stop.
@Suite struct StoreOutageTests {
    /// A clock that only the injected sleep moves, and what was said and slept.
    final class World: Sendable {
        let now = Mutex<Int64>(1_000_000)
        let said = Mutex<[String]>([])
        let slept = Mutex<[Int64]>([])

        func outage(stop: StopRequest = StopRequest(watchesSignals: false)) -> StoreOutage {
            StoreOutage(store: "postgres://db/q", stop: stop, reporter: Reporter { line in self.said.withLock { $0.append(line) } },
                        clock: { Timestamp(milliseconds: self.now.withLock { $0 }) },
                        sleep: { d in
                            self.slept.withLock { $0.append(d.milliseconds) }
                            self.now.withLock { $0 += d.milliseconds }
                        },
                        first: MsgDuration(milliseconds: 100), most: .seconds(2), seed: 7)
        }
    }

    static let gone = MsgError(.unreachable, "claiming messages: postgres://db/q closed the connection")

    @Test func waitsWithCappedBackoffAndSaysTheOutageOnceWhenItStartsAndEnds() throws {
        let world = World()
        let outage = world.outage()
        var calls: [Int64] = []
        let answer = try outage.retrying("claiming") { () throws(MsgError) -> Int in
            calls.append(world.now.withLock { $0 })
            if calls.count < 9 { throw Self.gone }
            return 42
        }
        #expect(answer == 42)
        #expect(outage.isUp)
        // The waits between tries: each within the upper half of 100, 200, … capped at 2 s.
        let gaps = zip(calls.dropFirst(), calls).map { $0 - $1 }
        let caps: [Int64] = [100, 200, 400, 800, 1600, 2000, 2000, 2000]
        #expect(gaps.count == caps.count)
        for (gap, cap) in zip(gaps, caps) { #expect(gap >= cap / 2 && gap <= cap + 100, "gap \(gap), cap \(cap)") }
        #expect(world.slept.withLock { $0 }.allSatisfy { $0 <= 100 }, "a stop is looked at every 100 ms")
        let said = world.said.withLock { $0 }
        #expect(said.count == 2, "\(said)")
        #expect(said.first == "claiming messages: postgres://db/q closed the connection; claiming waits for the store and tries again (stop with SIGTERM)")
        // Its length, from the first failed call to the one that went through.
        let seconds = Double(calls.last! - calls.first!) / 1000
        let told = said.last.flatMap { $0.split(separator: " ").dropFirst(6).first }.flatMap { Double($0) } ?? -1
        #expect(said.last?.hasPrefix("store postgres://db/q is reachable again after ") == true && said.last?.hasSuffix(" s; going on") == true)
        #expect(abs(told - seconds) <= 0.05, "told \(told) s for \(seconds) s")
    }

    @Test func otherErrorsAreNotRetried() {
        let world = World()
        var calls = 0
        #expect(throws: MsgError.self) {
            try world.outage().retrying("claiming") { () throws(MsgError) -> Int in
                calls += 1
                throw MsgError(.corrupt, "damaged")
            }
        }
        #expect(calls == 1)
        #expect(world.said.withLock { $0 }.isEmpty)
    }

    @Test func aStopDuringAnOutageEndsTheWaitAtOnce() {
        let world = World()
        let stop = StopRequest(watchesSignals: false)
        let outage = world.outage(stop: stop)
        var calls = 0
        do {
            _ = try outage.retrying("recording outcomes") { () throws(MsgError) -> Int in
                calls += 1
                if calls == 3 { stop.outputClosed() }
                throw Self.gone
            }
            Issue.record("no error")
        } catch {
            #expect(error.code == .unreachable)
            #expect(error.message.contains("stopped by standard output closed while waiting for the store"), "\(error.message)")
        }
        #expect(calls == 3, "no try after the stop")
        #expect(!outage.isUp)
    }
}
