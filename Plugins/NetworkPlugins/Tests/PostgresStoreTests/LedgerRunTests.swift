import MsgKit
import MsgKitTesting
import MsgSupport
@testable import PostgresStore
import Testing

/// The postgres:// ledger's runs when not every row of a statement applies (an id
/// stored before, a compare-and-set that fails, a removal of nothing): the run holds
/// the leaves of those that did, and each message's list names its own.
@Suite struct LedgerRunTests {
    /// Every leaf, and each message's list, read as `msg ledger` reads them.
    static func ledger(_ store: PostgresStore) throws -> (leaves: [LedgerLeaf], lists: [String: [Int]], removed: [String: [Int]]) {
        try store.ledgerRead { () throws(MsgError) -> ([LedgerLeaf], [String: [Int]], [String: [Int]]) in
            var leaves: [LedgerLeaf] = []
            try store.ledgerRuns(from: 0) { (first, bytes) throws(MsgError) -> Bool in
                #expect(first == leaves.count, "runs follow one another")
                var at = 0
                while let (leaf, end) = LedgerLeaf.read(bytes, at: at) {
                    leaves.append(leaf)
                    at = end
                }
                return true
            }
            #expect(try store.ledgerSize() == leaves.count)
            var lists: [String: [Int]] = [:]
            var removed: [String: [Int]] = [:]
            try store.ledgerMessages { (record, id, list) throws(MsgError) -> Bool in
                if record == nil { removed[id] = list ?? [] } else { lists[id] = list ?? [] }
                return true
            }
            return (leaves, lists, removed)
        }
    }

    @Test func statementsWhereSomeRowsDoNotApplyKeepOnlyTheirLeaves() throws {
        let store = try TestServer.open(try TestServer.freshURL())
        let (a, b, c) = (Fixtures.message(1), Fixtures.message(2), Fixtures.message(3))
        _ = try store.add([b])
        // a and c new, b stored before: the run holds a's and c's states.
        let added = try store.add([a, b, c])
        #expect(added.map(\.inserted) == [true, false, true])
        // a claimed; c's change expects the wrong status and is not applied.
        var sentA = a
        try sentA.transition(to: .sending, event: "attempt", at: Fixtures.t0)
        var sentC = c
        try sentC.transition(to: .sending, event: "attempt", at: Fixtures.t0)
        #expect(try store.update([Change(sentA, expected: .queued), Change(sentC, expected: .failed)]) == [true, false])
        // b removed, and an id that is not there.
        #expect(try store.remove([Removal(id: "not-there"), Removal(id: b.id)]) == [false, true])
        let (leaves, lists, removed) = try Self.ledger(store)
        let want: [LedgerLeaf] = [
            try LedgerLeaf.began(0), try LedgerLeaf.state(of: EncodedMessage(b)),
            try LedgerLeaf.state(of: EncodedMessage(a)), try LedgerLeaf.state(of: EncodedMessage(c)),
            LedgerLeaf(kind: .entry, n: 1, id: "", hash: try LedgerLeaf.entryHash(a.id, 1, sentA.history[1])),
            try LedgerLeaf.removed(b.id),
        ]
        #expect(leaves == want)
        #expect(lists == [a.id: [2, 4], c.id: [3]])
        #expect(removed == [b.id: [1, 5]])
    }
}
