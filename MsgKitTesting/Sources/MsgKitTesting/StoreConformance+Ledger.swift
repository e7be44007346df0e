import MsgKit
import MsgSupport

extension StoreConformance {
    /// A store that keeps a ledger (``StoreCapabilities/ledger``): each change's leaves
    /// are written with it and only with it, numbered in commit order, never changed;
    /// each message lists its own, a removed one keeps them. Skipped for stores that
    /// keep none.
    static func ledgerScenarios(_ runner: inout ScenarioRunner, fresh: () throws -> (String, any Store)) {
        runner.scenario("the ledger holds each change's leaves, as each message lists them") { c in
            let (_, store) = try fresh()
            guard let ledger = store.capabilities.journal else { return }
            /// Every leaf, in order, and each message's list (removed ones by id too).
            func read() throws -> (leaves: [LedgerLeaf], lists: [String: [Int]], removed: [String: [Int]], records: [String: EncodedMessage]) {
                try ledger.ledgerRead { () throws(MsgError) in
                    var leaves: [LedgerLeaf] = []
                    let size = try ledger.ledgerSize()
                    try ledger.ledgerRuns(from: 0) { (first, bytes) throws(MsgError) -> Bool in
                        c.expectEqual(first, leaves.count, "runs follow one another from leaf 0")
                        var at = 0
                        while at < bytes.count, let (leaf, end) = LedgerLeaf.read(bytes, at: at) {
                            leaves.append(leaf)
                            at = end
                        }
                        c.expectEqual(at, bytes.count, "a run is whole leaves")
                        return true
                    }
                    c.expectEqual(leaves.count, size, "the size is the leaves read")
                    var lists: [String: [Int]] = [:], removed: [String: [Int]] = [:], records: [String: EncodedMessage] = [:]
                    try ledger.ledgerMessages { (r, id, list) throws(MsgError) -> Bool in
                        if let r {
                            lists[id] = list
                            records[id] = r
                        } else {
                            removed[id] = list
                        }
                        return true
                    }
                    return (leaves, lists, removed, records)
                }
            }
            let before = try read()
            let a = Fixtures.message(1), b = Fixtures.message(2)
            _ = try store.add([a, b])
            var now = try read()
            c.expectEqual(now.leaves.count, before.leaves.count + 2, "one leaf each stored")
            for m in [a, b] {
                guard let list = now.lists[m.id], list.count == 1, list[0] < now.leaves.count, let r = now.records[m.id] else {
                    c.expect(false, "\(m.id) lists \(now.lists[m.id] ?? []), not its one leaf")
                    continue
                }
                c.expectEqual(now.leaves[list[0]], try LedgerLeaf.state(of: r), "stored: its whole state")
            }
            // A claim whose transform fails writes nothing, leaves included.
            _ = try? store.claim(Query(statuses: [.queued]), limit: 10) { (_) throws(MsgError) -> Message? in throw MsgError(.remote, "no") }
            c.expectEqual(try read().leaves.count, now.leaves.count, "a change rolled back has no leaf")
            // Claimed, then sent: an entry each.
            let t = Fixtures.t0.adding(.seconds(1))
            let taken = try store.claim(Query(statuses: [.queued], ids: [a.id]), limit: 1) { (m) throws(MsgError) -> Message? in
                var x = m
                try x.transition(to: .sending, event: "attempt", at: t)
                x.lease = Message.Lease(host: "h", pid: 1, until: t.adding(.seconds(60)))
                return x
            }
            guard let sending = taken.first else {
                c.expect(false, "nothing claimed")
                return
            }
            var sent = sending.message
            sent.lease = nil
            try sent.transition(to: .sent, event: "sent", at: t)
            _ = try store.update([Change(EncodedMessage(updating: sending, to: sent), expected: .sending)])
            let prefix = now.leaves
            now = try read()
            c.expectEqual(Array(now.leaves.prefix(prefix.count)), prefix, "leaves already written never change")
            if let list = now.lists[a.id], list.count == 3, list.allSatisfy({ $0 < now.leaves.count }) {
                for (n, at) in list.dropFirst().enumerated() {
                    c.expectEqual(now.leaves[at], LedgerLeaf(kind: .entry, n: n + 1, id: "", hash: try LedgerLeaf.entryHash(a.id, n + 1, sent.history[n + 1])),
                                  "entry \(n + 1) appended")
                }
                c.expect(list == list.sorted() && list.last! < now.leaves.count, "in commit order, within the log")
            } else {
                c.expect(false, "after a claim and an outcome, \(a.id) lists \(now.lists[a.id] ?? [])")
            }
            // b's content edited: its state again.
            var edited = try store.get(b.id)?.message ?? b
            edited.body = "edited"
            edited.history.append(Message.Event(at: t, event: "edited", status: .queued))
            _ = try store.update([Change(EncodedMessage(edited), expected: .queued)])
            now = try read()
            if let list = now.lists[b.id], let last = list.last, last < now.leaves.count, let r = now.records[b.id] {
                c.expectEqual(list.count, 2, "stored, edited")
                c.expectEqual(now.leaves[last], try LedgerLeaf.state(of: r), "an edit: the whole state")
            } else {
                c.expect(false, "\(b.id) has no leaves after its edit")
            }
            // Removed: its list kept, its removal last.
            _ = try store.remove([Removal(id: b.id)])
            now = try read()
            c.expect(now.lists[b.id] == nil, "removed")
            if let list = now.removed[b.id], let last = list.last, last < now.leaves.count {
                c.expectEqual(list.count, 3, "its leaves kept, and its removal")
                c.expectEqual(now.leaves[last], try LedgerLeaf.removed(b.id), "its removal")
            } else {
                c.expect(false, "a removed message keeps no list")
            }
        }
    }
}
