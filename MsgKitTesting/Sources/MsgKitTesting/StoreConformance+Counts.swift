import MsgKit

extension StoreConformance {
    /// A store that counts (``JournalStore/counts(now:excluding:)`` not nil) keeps its
    /// counts with every change: they equal what its records say, counted one by one
    /// (``Tally/added(_:)`` and ``Tally/attempts(in:)`` of each), after adds, claims,
    /// outcomes, some left in flight, a recipient edited, changes that do not apply and removals; and the
    /// counters of attempts stay when the records they came from are removed. A store
    /// that keeps no counts passes (the host reads its records instead).
    static func countScenarios(_ runner: inout ScenarioRunner, fresh: () throws -> (String, any Store)) {
        runner.scenario("a store that counts keeps its counts with every change, and purge leaves the counters") { c in
            let (_, store) = try fresh()
            guard try store.capabilities.journal?.counts(now: Fixtures.t0, excluding: []) != nil else { return }
            var random = SplitMix(seed: 36)
            let later = Fixtures.t0.adding(.seconds(30))
            let now = Fixtures.t0.adding(.seconds(60))
            var all = (0..<240).map { n in Fixtures.message(n, to: "r\(random.next(7))@x", createdOffset: Int64(n)) }
            for i in stride(from: 3, to: all.count, by: 17) { all[i].notBefore = Fixtures.t0.adding(.seconds(3600)) }
            _ = try store.add(all)
            _ = try store.add([all[0], all[1]])
            // Three rounds of claims and outcomes, in batches, as a flush makes them.
            for round in 0..<3 {
                var claimed: [Message] = []
                var changes: [Change] = []
                for var m in all where m.status == .queued || (m.status == .failed && round > 0) {
                    guard random.next(3) > 0 else { continue }
                    let expected = m.status
                    m.attempts += 1
                    try m.transition(to: .sending, event: "attempt", at: Fixtures.t0)
                    claimed.append(m)
                    changes.append(Change(m, expected: expected))
                }
                _ = try store.update(changes)
                changes = []
                for var m in claimed {
                    switch random.next(6) {
                    case 0, 1, 2: try m.transition(to: .sent, event: "sent", at: later.adding(.seconds(Int64(round))))
                    case 3:
                        let failure = Message.Failure(code: "timeout", message: "slow", retryable: true, at: later)
                        m.lastError = failure
                        m.nextAttemptAt = random.next(2) == 0 ? Fixtures.t0 : Fixtures.t0.adding(.seconds(7200))
                        try m.transition(to: .failed, event: "failed", at: later, error: failure)
                    case 4:
                        let failure = Message.Failure(code: "rejected", message: "no", retryable: false, at: later)
                        m.lastError = failure
                        try m.transition(to: .dead, event: "dead", at: later, error: failure)
                    default: try m.transition(to: .queued, event: "recovered", at: later)
                    }
                    changes.append(Change(m, expected: .sending))
                }
                // One that does not apply: its stored status is no longer queued.
                if let stale = claimed.first { changes.append(Change(stale, expected: .queued)) }
                _ = try store.update(changes)
                for m in claimed { all[all.firstIndex { $0.id == m.id }!] = try store.get(m.id)?.message ?? m }
            }
            var records: [Message] = []
            try store.list(Query()) { (r) throws(MsgError) -> Bool in records.append(r.message); return true }
            let counted = try check(&c, store, records, now: now, "after claims and outcomes")
            // Some left in flight; the counters stay as the attempts were made (an
            // edited recipient keeps its old one's).
            let inFlight = all.filter { $0.status == .queued }.prefix(5).map { (m) -> Change in
                var m = m
                try? m.transition(to: .sending, event: "attempt", at: later)
                return Change(m, expected: .queued)
            }
            _ = try store.update(Array(inFlight))
            for c in inFlight { all[all.firstIndex { $0.id == c.message.id }!] = c.message }
            // A recipient edited, a hold, and removals of a queued and of sent records.
            if let i = all.firstIndex(where: { $0.status == .queued }) {
                var m = all[i]
                m.to = "moved@x"
                _ = try store.update([Change(m, expected: .queued)])
            }
            if let i = all.lastIndex(where: { $0.status == .queued }) {
                var m = all[i]
                try m.transition(to: .held, event: "held", at: later)
                _ = try store.update([Change(m, expected: .queued)])
            }
            records = []
            try store.list(Query()) { (r) throws(MsgError) -> Bool in records.append(r.message); return true }
            let before = try check(&c, store, records, now: now, "after the changes", counters: counted)
            let sent = records.filter { $0.status == .sent }.prefix(40)
            let removals = sent.map { Removal(id: $0.id, statuses: [.sent]) } + [Removal(id: records[1].id, statuses: [.queued, .failed])]
            _ = try store.remove(removals)
            records = []
            try store.list(Query()) { (r) throws(MsgError) -> Bool in records.append(r.message); return true }
            let after = try check(&c, store, records, now: now, "after removals", counters: before)
            c.expect(!sent.isEmpty && after != nil, "some sent records were removed")
        }
    }

    /// Checks the store's counts against `records`: the record counts, the not yet
    /// due and the oldest due one as the records say; the counters as the records'
    /// histories say, or, given `counters`, as they were then. - Returns: the counts.
    @discardableResult
    private static func check(_ c: inout Checker, _ store: any Store, _ records: [Message], now: Timestamp, _ when: String,
                              counters: Tally? = nil) throws -> Tally? {
        let excluded: Set<String> = ["r0@x"]
        guard let counts = try store.capabilities.journal?.counts(now: now, excluding: excluded) else {
            c.expect(false, "\(when): the store stopped counting")
            return nil
        }
        var expected = Tally()
        var notYetDue: [String: Int] = [:]
        var oldestDue: Timestamp?
        var inFlight: [String: Int] = [:]
        for m in records {
            expected.added(m)
            expected.attempts(in: m)
            if m.status == .sending { inFlight[m.to, default: 0] += 1 }
            guard m.status == .queued || m.status == .failed else { continue }
            if let due = m.dueAt, due > now {
                notYetDue[m.to, default: 0] += 1
            } else if !excluded.contains(m.to), oldestDue.map({ m.createdAt < $0 }) ?? true {
                oldestDue = m.createdAt
            }
        }
        func split(_ t: Tally) -> (records: [Tally.Key: Int], counters: [Tally.Key: Int]) {
            (t.figures.filter { $0.key.kind == .messages }, t.figures.filter { $0.key.kind != .messages })
        }
        let (have, want) = (split(counts.tally), split(expected))
        c.expectEqual(have.records, want.records, "\(when): records by recipient and status")
        c.expectEqual(have.counters, counters.map { split($0).counters } ?? want.counters, "\(when): counters of attempts")
        c.expect(!have.counters.isEmpty, "\(when): some attempts counted")
        c.expectEqual(counts.notYetDue, notYetDue, "\(when): not yet due by recipient")
        c.expectEqual(counts.inFlight, inFlight, "\(when): in flight by recipient")
        if counters != nil { c.expect(!inFlight.isEmpty, "\(when): some in flight") }
        c.expectEqual(counts.oldestDue, oldestDue, "\(when): the oldest due, r0@x left out")
        return counts.tally
    }
}
