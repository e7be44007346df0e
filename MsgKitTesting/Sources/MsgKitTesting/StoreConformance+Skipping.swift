import MsgKit

extension StoreConformance {
    /// Candidates when most of the queue waits behind destinations a claim skips:
    /// however a store leaves the skipped ones out (an index, destination heads), it
    /// must give the rows the FIFO walk would, in its order.
    static func skippingScenarios(_ runner: inout ScenarioRunner, fresh: () throws -> (String, any Store)) {
        runner.scenario("candidates past a crowd of skipped destinations are those of the FIFO walk, in FIFO order") { c in
            let (_, store) = try fresh()
            var random = SplitMix(seed: 32)
            let now = Fixtures.t0.adding(.seconds(60))
            var all: [Message] = []
            // 1,500 messages to three crowded destinations, interleaved with 300 to
            // twenty others in every status; several created in the same millisecond,
            // so the id decides their order.
            for n in 0..<1_800 {
                let crowded = n % 6 != 5
                let to = crowded ? "slow\(random.next(3))" : "d\(random.next(20))"
                var m = Fixtures.message(n, to: to, createdOffset: Int64(n / 12) * 7 + Int64(random.next(2)))
                if !crowded {
                    switch random.next(6) {
                    case 0: m.notBefore = Fixtures.t0.adding(.seconds(Int64(random.next(120))))
                    case 1:
                        try m.transition(to: .sending, event: "attempt", at: Fixtures.t0)
                        try m.transition(to: .failed, event: "failed", at: Fixtures.t0)
                        m.nextAttemptAt = Fixtures.t0.adding(.seconds(Int64(random.next(120))))
                    case 2: try m.transition(to: .held, event: "held", at: Fixtures.t0)
                    case 3:
                        try m.transition(to: .sending, event: "attempt", at: Fixtures.t0)
                        try m.transition(to: .sent, event: "sent", at: Fixtures.t0)
                    default: break
                    }
                }
                all.append(m)
            }
            _ = try store.add(all.map { EncodedMessage($0) })
            let fifo = all.sorted { ClaimPosition(createdAt: $0.createdAt, id: $0.id).isBefore(ClaimPosition(createdAt: $1.createdAt, id: $1.id)) }
            let query = Query(statuses: [.queued, .failed], dueBy: now)
            let matching = fifo.filter { ($0.status == .queued || $0.status == .failed) && ($0.dueAt.map { $0 <= now } ?? true) }
            for round in 0..<40 {
                let skipping: Set<String> = round % 4 == 3 ? ["slow0", "slow2", "d3"] : ["slow0", "slow1", "slow2"]
                let limit = [1, 2, 7, 64, 500][round % 5]
                let start = round % 8 == 0 ? nil : fifo[random.next(fifo.count)]
                let after = start.map { ClaimPosition(createdAt: $0.createdAt, id: $0.id) }
                let expected = matching.filter { m in
                    !skipping.contains(m.to) && after.map { $0.isBefore(ClaimPosition(createdAt: m.createdAt, id: m.id)) } ?? true
                }.map(\.id)
                let got = try store.claimSession { (s) throws(MsgError) in
                    try s.candidates(query, after: after, skipping: skipping, limit: limit)
                }
                let gotFree = got.map(\.record.message).filter { !skipping.contains($0.to) }.map(\.id)
                let told = "limit \(limit), after \(after.map { "\($0.createdAt.milliseconds)/\($0.id)" } ?? "the start"), skipping \(skipping.sorted())"
                c.expect(got.count <= limit, "no more than the limit (\(told))")
                c.expectEqual(gotFree, Array(expected.prefix(gotFree.count)), "the rows not skipped are the FIFO walk's, in order (\(told))")
                if got.count < limit {
                    c.expectEqual(gotFree, expected, "a short answer is the end of the queue (\(told))")
                } else if gotFree.count == got.count {
                    c.expectEqual(gotFree.count, min(limit, expected.count), "a store that leaves skipped ones out fills the limit (\(told))")
                }
            }
        }
    }
}

extension ClaimPosition {
    /// FIFO order as stores keep it: the id compared by its bytes.
    func isBefore(_ other: ClaimPosition) -> Bool {
        createdAt != other.createdAt ? createdAt < other.createdAt : id.utf8.lexicographicallyPrecedes(other.id.utf8)
    }
}

/// A small seeded generator (SplitMix64), so a failing scenario fails the same way again.
struct SplitMix {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Int(z % UInt64(bound))
    }
}
