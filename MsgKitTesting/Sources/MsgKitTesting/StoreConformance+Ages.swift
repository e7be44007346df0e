import MsgKit

extension StoreConformance {
    /// A store that counts by creation time (``JournalStore/created(after:)``) gives, after adds,
    /// status changes and removals, what its records say: per status, those created
    /// strictly after each time asked (times on a record's own millisecond and on a
    /// minute's edges included), then all of them. Times are near the clock's now, as `queue stats`
    /// asks (a store may keep only recent minutes). A store that does not count passes.
    static func ageScenarios(_ runner: inout ScenarioRunner, fresh: () throws -> (String, any Store)) {
        runner.scenario("a store that counts by creation time agrees with its records") { c in
            let (_, store) = try fresh()
            guard let counting = store.capabilities.journal else { return }
            let now = Timestamp.now()
            let minute = now.milliseconds - now.milliseconds % 60_000
            // Ages in ms: a minute's edges, the buckets' edges and either side, days.
            let ages: [Int64] = [-40_000, 0, 1, 59_999, 60_000, 60_001, 299_999, 300_000, 300_001, 3_599_999, 3_600_000,
                                 3_600_001, 86_399_999, 86_400_000, 172_800_000, 604_799_999, 604_800_000, 604_800_001,
                                 now.milliseconds - minute, now.milliseconds - minute + 1, 9 * 86_400_000, 30 * 86_400_000]
            var random = SplitMix(seed: 52)
            var all: [Message] = []
            for (i, age) in ages.enumerated() {
                for k in 0..<3 {
                    var m = Fixtures.message(i * 3 + k, to: "r\(random.next(3))@x")
                    m.createdAt = Timestamp(milliseconds: now.milliseconds - age)
                    m.updatedAt = m.createdAt
                    all.append(m)
                }
            }
            _ = try store.add(all)
            // Some sent, some dead, one held, one edited; then removals.
            var changes: [Change] = []
            for (i, m) in all.enumerated() where i % 3 != 0 {
                var x = m
                try x.transition(to: .sending, event: "attempt", at: now)
                try x.transition(to: i % 3 == 1 ? .sent : .dead, event: "outcome", at: now)
                changes.append(Change(x, expected: .queued))
            }
            var held = all[0]
            try held.transition(to: .held, event: "held", at: now)
            changes.append(Change(held, expected: .queued))
            var edited = all[3]
            edited.to = "moved@x"
            changes.append(Change(edited, expected: .queued))
            _ = try store.update(changes)
            _ = try store.remove([Removal(id: all[1].id, statuses: nil), Removal(id: all[5].id, statuses: [.dead])])
            var records: [Message] = []
            try store.list(Query()) { (r) throws(MsgError) -> Bool in records.append(r.message); return true }
            let times = [300_000, 3_600_000, 86_400_000, 604_800_000, 1, 60_000, 60_001, 0, now.milliseconds - minute]
                .map { Timestamp(milliseconds: now.milliseconds - Int64($0)) }
            guard let have = try counting.created(after: times) else {
                c.expect(false, "the store counts by creation time but answered nil")
                return
            }
            var want: [String: [Int]] = [:]
            let zero = Array(repeating: 0, count: times.count + 1)
            for m in records {
                want[m.status.rawValue, default: zero][times.count] += 1
                for (i, t) in times.enumerated() where m.createdAt > t { want[m.status.rawValue, default: zero][i] += 1 }
            }
            c.expectEqual(have.filter { $0.value != zero }, want, "records per status created after each time, then all of them")
        }
    }
}
