import MsgKit
import MsgKitTesting
import Testing

/// The commit journal's bytes and their fold (``CommitFold``), alone: what a store
/// writes a commit, read back as counts and floors, with no store.
@Suite struct CommitJournalTests {
    /// The effects of storing `messages` anew, as a store's recorder takes them.
    func effects(_ messages: [Message]) throws -> CommitEffects {
        var rec = ChangeRecorder()
        for m in messages {
            let r = EncodedMessage(m)
            try rec.inserted(r, m, prep: LedgerPrep(r, stored: true))
        }
        return rec.take()
    }

    func bytes(_ e: CommitEffects) -> [UInt8] {
        var out: [UInt8] = []
        e.journalBytes(into: &out)
        return out
    }

    /// Rows folded give what adding the effects gives, and a snapshot read back is
    /// the fold it was written from, names of any bytes among them.
    @Test func rowsFoldIntoTheCountsTheyRecorded() throws {
        let a = try effects([Fixtures.message(1, to: "ann"), Fixtures.message(2, to: "bé;1:x\n")])
        let b = try effects([Fixtures.message(3, to: "ann", createdOffset: 120)])
        var folded = CommitFold()
        for e in [a, b] {
            #expect(bytes(e).withUnsafeBytes { folded.add(journal: $0) })
        }
        var added = CommitFold()
        added.add(a)
        added.add(b)
        #expect(folded == added)
        #expect(folded.tally[Tally.records(to: "ann", status: "queued")] == 2)
        #expect(folded.tally[Tally.records(to: "bé;1:x\n", status: "queued")] == 1)
        #expect(folded.created.values.reduce(0, +) == 3)
        folded.mark = 42
        var snap: [UInt8] = []
        folded.snapshot(into: &snap)
        #expect(snap.withUnsafeBytes { CommitFold(snapshot: $0) } == folded)
    }

    /// Bytes of another format, or cut short, add nothing and say so.
    @Test func bytesThatDoNotReadAreRefused() throws {
        let good = bytes(try effects([Fixtures.message(1)]))
        var fold = CommitFold()
        var other = good
        other[0] = 2
        #expect(!other.withUnsafeBytes { fold.add(journal: $0) })
        #expect(!Array(good.prefix(12)).withUnsafeBytes { fold.add(journal: $0) })
        #expect(fold == CommitFold())
        #expect([UInt8]().withUnsafeBytes { CommitFold(snapshot: $0) } == nil)
    }

    /// The floor since a mark is the lowest the rows after it wrote; a state, a row
    /// that does not read, no mark or one ahead of the store's make it all.
    @Test func floorsSinceAMark() throws {
        let early = Fixtures.message(1, createdOffset: 5), late = Fixtures.message(2, createdOffset: 60)
        let floors = try [effects([late]), effects([early])].map { e in bytes(e).withUnsafeBytes { CommitEffects.floor(ofJournal: $0) } }
        #expect(floors == [.lowest(late.createdAt), .lowest(early.createdAt)])
        #expect(CommitFold.floor(since: 3, newest: 5, floors) == ChangeFloor(mark: 5, floor: .from(ClaimPosition(createdAt: early.createdAt, id: ""))))
        #expect(CommitFold.floor(since: 5, newest: 5, []).floor == ChangeFloor.Floor.none)
        var state = CommitEffects()
        state.floor = .all
        let all = bytes(state).withUnsafeBytes { CommitEffects.floor(ofJournal: $0) }
        #expect(CommitFold.floor(since: 3, newest: 6, floors + [all]).floor == .all)
        #expect(CommitFold.floor(since: 3, newest: 6, floors + [nil]).floor == .all)
        #expect(CommitFold.floor(since: nil, newest: 6, floors).floor == .all)
        #expect(CommitFold.floor(since: 7, newest: 6, []).floor == .all)
    }

    /// Counts by age: the minutes after each time from the fold, its own minute's
    /// rest from the store, the total last; a time older than the fold keeps is nil.
    @Test func countsByAgeAddTheStoresPartialMinute() throws {
        let now = Fixtures.t0.adding(.seconds(3600))
        var fold = CommitFold()
        fold.add(try effects([Fixtures.message(1, createdOffset: 0), Fixtures.message(2, createdOffset: 600_000)]))
        let t = Fixtures.t0.adding(.seconds(1))
        let out = fold.created(after: [t], now: now) { (_: Timestamp) -> [String: Int] in ["queued": 7] }
        #expect(out == ["queued": [1 + 7, 2]], "the minute after t's from the fold, t's own from the store")
        let old = now.adding(.seconds(-9 * 24 * 3600))
        #expect(fold.created(after: [old], now: now) { (_: Timestamp) -> [String: Int] in [:] } == nil)
        fold.prune(now: now.adding(.seconds(9 * 24 * 3600)))
        #expect(fold.created.isEmpty, "minutes past eight days are forgotten")
    }
}
