#if canImport(Glibc)
import Glibc
#endif
import MsgKit
import MsgSupport
import MsgKitTesting
import Testing

/// The JSON store on the commit journal: one journal line a commit, from which
/// MsgKit folds the counts and answers the floors, as the SQL stores' rows.
@Suite struct JSONJournalTests {
    private func lines(_ path: String) throws -> [String] {
        try readFile(path).split(separator: 0x0A).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The same changes made in a JSON and a SQLite store: each a store, a claim that
    /// sends, one that fails with a retry, one that is purged.
    private func changes(_ store: any Store) throws {
        _ = try store.add((1...6).map { Fixtures.message($0, to: $0 % 2 == 0 ? "ann" : "bob", createdOffset: Int64($0)) })
        for (n, outcome) in [(1, Status.sent), (2, .failed), (3, .sent)] {
            var m = try #require(try store.get(Fixtures.message(n).id)).message
            try m.transition(to: .sending, event: "attempt", at: Fixtures.t0.adding(.seconds(10)))
            _ = try store.update([Change(m, expected: .queued)])
            try m.transition(to: outcome, event: outcome == .sent ? "sent" : "failed", at: Fixtures.t0.adding(.seconds(11)))
            if outcome == .failed { m.nextAttemptAt = Timestamp.now().adding(.seconds(3600)) }
            _ = try store.update([Change(m, expected: .sending)])
        }
        _ = try store.remove([Removal(id: Fixtures.message(1).id, statuses: [.sent])])
    }

    /// The counts folded from the journal lines are the SQLite store's for the same
    /// changes, the attempts of a purged message included (which its records no
    /// longer give), read by a handle of its own and after a compaction alike.
    @Test func theCountsAreTheSQLiteStoresForTheSameChanges() throws {
        let dir = temporaryDirectory()
        let json = try loader.openStore("json:\(dir)/q.json"), sqlite = try loader.openStore("sqlite:\(dir)/q.sqlite")
        try changes(json)
        try changes(sqlite)
        let now = Timestamp.now()
        let want = try #require(try sqlite.capabilities.journal?.counts(now: now, excluding: ["bob"]))
        let fresh = try loader.openStore("json:\(dir)/q.json", access: .read)
        for store in [json, fresh] {
            let got = try #require(try store.capabilities.journal?.counts(now: now, excluding: ["bob"]))
            #expect(got == want)
        }
        #expect(want.tally.figures.contains { $0.key.kind == .deliveries && $0.value == 2 }, "the purged one's delivery is counted: \(want.tally)")
        #expect(want.notYetDue == ["ann": 1] && want.inFlight.isEmpty)
        let edges = [Fixtures.t0.adding(.seconds(3)), now.adding(.seconds(-3600))]
        #expect(try fresh.capabilities.journal?.created(after: edges) == sqlite.capabilities.journal?.created(after: edges))
    }

    /// Each commit is one journal line; the floors since a mark are read from them:
    /// the lowest record written, none, all for a state or a mark ahead.
    @Test func aCommitIsOneJournalLineAndItsFloor() throws {
        let path = "\(temporaryDirectory())/q.json"
        let store = try loader.openStore("json:\(path)")
        let floors = try #require(store.capabilities.journal)
        let mark = try floors.changeFloor(since: nil).mark
        let first = Fixtures.message(1, createdOffset: 5)
        _ = try store.add([Fixtures.message(2, createdOffset: 9), first])
        let written = try lines(path)
        #expect(written.count == 3 && written[0].hasPrefix(#"{"$ledger":""#) && written[0].contains(#""commit":3,"effects":""#), "\(written)")
        let reader = try #require(try loader.openStore("json:\(path)", access: .read).capabilities.journal)
        for f in [floors, reader] {
            #expect(try f.changeFloor(since: mark) == ChangeFloor(mark: mark + 1, floor: .from(ClaimPosition(createdAt: first.createdAt, id: ""))))
        }
        #expect(try reader.changeFloor(since: mark + 1).floor == ChangeFloor.Floor.none)
        _ = try store.claimSession { (session) throws(MsgError) in try session.store([], states: ["k": "paused"]) }
        #expect(try reader.changeFloor(since: mark + 1) == ChangeFloor(mark: mark + 2, floor: .all), "a state written")
        #expect(try reader.changeFloor(since: mark + 7).floor == .all, "a mark ahead of the store's")
    }

    /// A record line added by hand is a change the journal does not hold: the
    /// counts are not whole (the host reads the records) and a scan goes back to
    /// the start, until the next writer counts afresh in a kept line before its commit.
    @Test func aLineByHandIsCountedAfreshByTheNextWriter() throws {
        let path = "\(temporaryDirectory())/q.json"
        let store = try loader.openStore("json:\(path)")
        _ = try store.add([Fixtures.message(1)])
        let mark = try #require(store.capabilities.journal).changeFloor(since: nil).mark
        try append(path, Array((Fixtures.message(2).jsonText() + "\n").utf8))
        let reader = try loader.openStore("json:\(path)", access: .read)
        #expect(try reader.capabilities.journal?.counts(now: .now(), excluding: []) == nil)
        #expect(try reader.capabilities.journal?.changeFloor(since: mark).floor == .all)
        _ = try store.add([Fixtures.message(3)])
        let written = try lines(path)
        #expect(written.count == 6 && written[3].hasPrefix(#"{"$ledger":"","kept":"fold","value":""#), "\(written)")
        let counts = try #require(try reader.capabilities.journal?.counts(now: .now(), excluding: []))
        #expect(counts.tally.figures[Tally.records(to: "bob", status: "queued")] == 3, "\(counts.tally)")
    }

    /// Compaction keeps the counts, the hints and the journal's numbering: a mark
    /// taken before it is answered from the lines after it.
    @Test func compactionKeepsTheCountsHintsAndMarks() throws {
        let path = "\(temporaryDirectory())/q.json"
        let store = try loader.openStore("json:\(path)")
        let floors = try #require(store.capabilities.journal)
        _ = try store.add((0..<20).map { Fixtures.message($0) })
        try floors.saveScanHint("flush", "where it stopped")
        let before = try #require(try store.capabilities.journal?.counts(now: .now(), excluding: []))
        let size = try readFile(path).count
        var last = try floors.changeFloor(since: nil).mark
        for round in 0..<3 {
            for i in 0..<20 {
                var m = try #require(try store.get(Fixtures.message(i).id)).message
                try m.transition(to: round % 2 == 0 ? .held : .queued, event: round % 2 == 0 ? "held" : "released", at: Fixtures.t0.adding(.seconds(Int64(round + 1))))
                _ = try store.update([Change(m, expected: round % 2 == 0 ? .queued : .held)])
            }
            last = try floors.changeFloor(since: nil).mark
        }
        #expect(try readFile(path).count < size * 3, "compacted")
        #expect(try lines(path).contains { $0.hasPrefix(#"{"$ledger":"","kept":"fold""#) }, "its counts kept")
        let fresh = try loader.openStore("json:\(path)", access: .read)
        let after = try #require(try fresh.capabilities.journal?.counts(now: .now(), excluding: []))
        #expect(after.tally.figures[Tally.records(to: "bob", status: "held")] == 20 && before.tally.figures[Tally.records(to: "bob", status: "queued")] == 20)
        #expect(try fresh.capabilities.journal?.scanHint("flush") == "where it stopped")
        let reader = try #require(fresh.capabilities.journal)
        #expect(try reader.changeFloor(since: last) == ChangeFloor(mark: last, floor: .none), "the numbering goes on across it")
        _ = try store.add([Fixtures.message(30, createdOffset: 7)])
        #expect(try reader.changeFloor(since: last).floor == .from(ClaimPosition(createdAt: Fixtures.message(30, createdOffset: 7).createdAt, id: "")))
    }
}
