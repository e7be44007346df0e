import MsgKit

extension StoreConformance {
    /// Records whose content is large (kilobytes of body and headers): however a
    /// store keeps them (the SQLite store writes such content once, apart from the
    /// row each change rewrites), every read gives the bytes msg wrote, through
    /// every change of their life, an edit of their content either way, and removal.
    static func largeScenarios(_ runner: inout ScenarioRunner, fresh: () throws -> (String, any Store)) {
        runner.scenario("a large record reads byte for byte through its life, edits and removal") { c in
            let (_, store) = try fresh()
            var big = Fixtures.message(1)
            big.body = String(repeating: "lorem \"ipsum\" \\ dolor ünïcødé\n\t", count: 160)
            big.headers = [("Subject", String(repeating: "é", count: 700)), ("x-seq", "1")]
            big.from = "alice@example.com"
            let small = Fixtures.message(2)
            _ = try store.add([big, small])
            func check(_ m: Message, _ when: String) throws {
                let want = EncodedMessage(m)
                c.expectEqual(try store.get(m.id)?.json, want.json, "\(when): get, byte for byte")
                var listed: [[UInt8]] = []
                try store.list(Query(ids: [m.id])) { (r) throws(MsgError) -> Bool in listed.append(r.json); return true }
                c.expectEqual(listed, [want.json], "\(when): list")
                for history in [true, false] {
                    var texts: [[UInt8]] = []
                    try store.listJSON(Query(ids: [m.id]), includeHistory: history) { (b) throws(MsgError) -> Bool in texts.append(Array(b)); return true }
                    c.expectEqual(texts, [history ? want.json : want.jsonWithoutHistory], "\(when): listJSON, history \(history)")
                }
            }
            try check(big, "added")
            try check(small, "the small one, added")
            // In flight through a claim, then sent.
            let now = Fixtures.t0.adding(.seconds(1))
            let taken = try store.claim(Query(statuses: [.queued], ids: [big.id]), limit: 10) { (m) throws(MsgError) -> Message? in
                var x = m
                try x.transition(to: .sending, event: "attempt", at: now)
                x.lease = Message.Lease(host: "h", pid: 1, until: now.adding(.seconds(60)))
                return x
            }
            c.expectEqual(taken.count, 1, "claimed")
            guard let sending = taken.first else { return }
            try check(sending.message, "sending")
            var sent = sending.message
            sent.lease = nil
            try sent.transition(to: .sent, event: "sent", at: now)
            c.expectEqual(try store.update([Change(EncodedMessage(updating: sending, to: sent), expected: .sending)]), [true], "outcome")
            try check(sent, "sent")
            // Its content edited smaller, then larger again.
            var smaller = sent
            smaller.body = "short now"
            smaller.headers = [("x-seq", "1")]
            c.expectEqual(try store.update([Change(EncodedMessage(smaller), expected: .sent)]), [true], "edit to a small content")
            try check(smaller, "edited small")
            var larger = smaller
            larger.body = String(repeating: "grown again ", count: 400)
            c.expectEqual(try store.update([Change(EncodedMessage(larger), expected: .sent)]), [true], "edit to a large content")
            try check(larger, "edited large")
            var other = larger
            other.body = String(repeating: "and changed ", count: 400)
            c.expectEqual(try store.update([Change(EncodedMessage(other), expected: .sent)]), [true], "edit of a large content")
            try check(other, "edited, still large")
            // A change that does not apply changes nothing.
            var stale = other
            stale.body = String(repeating: "never stored ", count: 400)
            c.expectEqual(try store.update([Change(EncodedMessage(stale), expected: .queued)]), [false], "a change expecting another status")
            try check(other, "after a change that did not apply")
            c.expectEqual(try store.remove([Removal(id: other.id)]), [true], "removed")
            c.expectEqual(try store.get(other.id)?.json, nil, "gone")
            c.expectEqual(try store.count(Query()), 1, "the small one is left")
            try check(small, "the small one, at the end")
            // The id is free again, for a record of another content.
            var again = Fixtures.message(1)
            again.body = String(repeating: "a new record under the old id ", count: 60)
            c.expectEqual(try store.add([again]).map(\.inserted), [true], "added again")
            try check(again, "added again")
        }
    }
}
