import MsgKit
import MsgKitTesting
import Testing

/// ``ChangeRecorder``, alone: row changes in, what the commit writes out (no
/// store, no thread). The rules every store used to write by hand are here once:
/// the tally's deltas, the counts by creation minute, the floor and the leaf a
/// change takes.
@Suite struct ChangeRecorderTests {
    let m0 = Fixtures.message(1, to: "ann")

    /// `m` after a step of its life, as a store is given it.
    func step(_ m: Message, to status: Status, _ event: String, at seconds: Int64) throws -> Message {
        var x = m
        try x.transition(to: status, event: event, at: Fixtures.t0.adding(.seconds(seconds)))
        return x
    }

    func facts(_ m: Message, entries: Int, print: Int64) -> StoredFacts {
        StoredFacts(id: m.id, status: m.status.rawValue, recipient: m.to, createdAt: m.createdAt, ledgerEntries: entries, contentPrint: print)
    }

    @Test func aRecordStoredAnewIsCountedAndItsStateIsItsLeaf() throws {
        var rec = ChangeRecorder()
        let r = EncodedMessage(m0)
        let prep = LedgerPrep(r, stored: true)
        #expect(rec.insertion(m0, prep: prep) == RowLedger(entries: m0.history.count, contentPrint: prep.print, leaves: 0..<1),
                "what the row would get, recording nothing")
        #expect(rec.isEmpty)
        let row = try rec.inserted(r, m0, prep: prep)
        #expect(row == RowLedger(entries: m0.history.count, contentPrint: LedgerLeaf.contentPrint(r), leaves: 0..<1))
        let e = rec.take()
        var tally = Tally()
        tally.added(m0)
        #expect(e.tally == tally)
        #expect(e.created == [CreatedMinute(status: "queued", minute: CreatedMinute.minute(of: m0.createdAt)): 1])
        #expect(e.floor == .lowest(m0.createdAt))
        var state: [UInt8] = []
        try LedgerLeaf.state(of: r).write(to: &state)
        #expect(e.leafCount == 1 && e.leaves == state, "its whole state")
        #expect(rec.isEmpty, "taken: the recorder starts again")
    }

    /// A claim and an outcome: one history entry appended to the same content, the
    /// row found as ``ChangeRecorder/commonChange(_:_:expected:prep:)`` says.
    @Test func theCommonChangeAppendsOneEntry() throws {
        var rec = ChangeRecorder()
        let sending = try step(m0, to: .sending, "attempt", at: 1)
        let r = EncodedMessage(sending)
        let prep = LedgerPrep(r, stored: false)
        let common = rec.commonChange(r, sending, expected: .queued, prep: prep)
        #expect(common.facts == StoredFacts(id: m0.id, status: "queued", recipient: "ann", createdAt: m0.createdAt,
                                            ledgerEntries: sending.history.count - 1, contentPrint: prep.print))
        #expect(common.row.leaves == 0..<1 && common.row.entries == sending.history.count)
        let row = try rec.updated(r, sending, from: common.facts, prep: prep)
        #expect(row == common.row, "what the store bound before it knew the change applied")
        let e = rec.take()
        #expect(e.leaves == (try LedgerLeaf.bytes(r, entry: sending.history.count - 1)), "its last entry")
        var tally = Tally()
        tally.changed(from: .queued, to: "ann", into: sending)
        #expect(e.tally == tally)
        let minute = CreatedMinute.minute(of: m0.createdAt)
        #expect(e.created == [CreatedMinute(status: "queued", minute: minute): -1, CreatedMinute(status: "sending", minute: minute): 1])
    }

    /// The leaf a change takes, from what its row's ledger holds.
    @Test(arguments: [
        ("the same content, one entry more", 0, true, "entries 1"),
        ("the same content, two entries more", -1, true, "entries 2"),
        ("another content (an edit)", 0, false, "state"),
        ("stored before the ledger", -2, true, "state"),
    ])
    func aChangeTakesTheLeavesItsRowCallsFor(_ name: String, _ entriesBack: Int, _ sameContent: Bool, _ wanted: String) throws {
        let sending = try step(m0, to: .sending, "attempt", at: 1)
        let sent = try step(sending, to: .sent, "sent", at: 2)
        let r = EncodedMessage(sent)
        let prep = LedgerPrep(r, stored: false)
        let n = sent.history.count
        // entriesBack: 0 the row holds all but the last, -1 all but two, -2 none (before the ledger).
        let held = entriesBack == -2 ? -1 : n - 1 + entriesBack
        let print = sameContent ? prep.print : prep.print &+ 1
        var rec = ChangeRecorder()
        let row = try rec.updated(r, sent, from: facts(sending, entries: held, print: print), prep: prep)
        let e = rec.take()
        var expected: [UInt8] = []
        switch wanted {
        case "state": try LedgerLeaf.state(of: r).write(to: &expected)
        case "entries 1": expected = try LedgerLeaf.bytes(r, entry: n - 1)
        default: for leaf in try LedgerLeaf.entries(of: r, from: n - 2) { leaf.write(to: &expected) }
        }
        #expect(e.leaves == expected, "\(name)")
        #expect(row.leaves.count == e.leafCount && row.entries == n && row.contentPrint == prep.print, "\(name)")
    }

    @Test func aRemovalIsItsLeafAndTakesTheRecordOutOfItsCounts() throws {
        var rec = ChangeRecorder()
        let old = StoredFacts(id: m0.id, status: "dead", recipient: "ann", createdAt: m0.createdAt, ledgerEntries: 3, contentPrint: 7)
        #expect(try rec.removed(old) == 0..<1)
        let e = rec.take()
        var tally = Tally()
        tally.removed(to: "ann", status: "dead")
        #expect(e.tally == tally)
        #expect(e.created == [CreatedMinute(status: "dead", minute: CreatedMinute.minute(of: m0.createdAt)): -1])
        var leaf: [UInt8] = []
        try LedgerLeaf.removed(m0.id).write(to: &leaf)
        #expect(e.leaves == leaf)
    }

    /// The floor is the lowest creation time written, and a state written makes it all.
    @Test func theFloorIsTheLowestWrittenOrAllAfterAState() throws {
        var rec = ChangeRecorder()
        let late = Fixtures.message(2, createdOffset: 5_000), early = Fixtures.message(3, createdOffset: -5_000)
        for m in [late, early, m0] {
            let r = EncodedMessage(m)
            try rec.inserted(r, m, prep: LedgerPrep(r, stored: true))
        }
        var e = rec.take()
        #expect(e.floor == .lowest(early.createdAt))
        #expect(e.leafCount == 3)
        rec.wroteStates()
        let r = EncodedMessage(early)
        try rec.inserted(r, early, prep: LedgerPrep(r, stored: true))
        e = rec.take()
        #expect(e.floor == .all, "a state written: anything may have changed")
        #expect(rec.take().floor == .none && rec.take().isEmpty)
    }

    /// A row whose stored status msg does not know (a damaged one) leaves its own
    /// figure and the record joins the new one.
    @Test func aStatusMsgDoesNotKnowLeavesItsFigure() throws {
        var rec = ChangeRecorder()
        let r = EncodedMessage(m0)
        try rec.updated(r, m0, from: StoredFacts(id: m0.id, status: "bogus", recipient: "x", createdAt: m0.createdAt, ledgerEntries: -1, contentPrint: 0),
                        prep: LedgerPrep(r, stored: false))
        var tally = Tally()
        tally.removed(to: "x", status: "bogus")
        tally.added(m0)
        #expect(rec.take().tally == tally)
    }
}

/// ``LedgerPrep``: the leaf made on the reading thread is the one the store would
/// have made before its commit, and a batch takes it only for its own kind of change.
@Suite struct LedgerPrepTests {
    @Test func aLeafMadeBeforehandIsTheOneMadeAtTheCommit() throws {
        let records = (0..<100).map { Fixtures.message($0, to: "to\($0 % 7)") }
        let prepared = records.map { EncodedMessage($0, preparingLedger: true) }
        let plain = records.map { EncodedMessage($0) }
        #expect(prepared == plain, "the same record text")
        let made = LedgerPrep.batch(prepared, stored: true)
        let fresh = LedgerPrep.batch(plain, stored: true)
        #expect(made.map(\.print) == fresh.map(\.print))
        #expect(made.map(\.leaf) == fresh.map(\.leaf))
        for (r, p) in zip(plain, made) {
            var state: [UInt8] = []
            try LedgerLeaf.state(of: r).write(to: &state)
            #expect(p.leaf == state, "a record stored anew: its whole state")
        }
    }

    /// A flush's worker makes an outcome's leaf where it splices the record: the
    /// same text, and the leaf of its last entry that the commit would have made.
    @Test func anOutcomesLeafMadeWhereItIsSplicedIsTheOneMadeAtTheCommit() throws {
        var spliced: [EncodedMessage] = []
        for i in 0..<50 {
            var m = Fixtures.message(i, to: "to\(i % 5)")
            try m.transition(to: .sending, event: "attempt", at: Fixtures.t0.adding(.seconds(1)))
            let claimed = EncodedMessage(m)
            try m.transition(to: .sent, event: "sent", at: Fixtures.t0.adding(.seconds(2)))
            spliced.append(EncodedMessage(updating: claimed, to: m))
        }
        let prepared = spliced.map { $0.preparingLedger(stored: false) }
        #expect(prepared == spliced, "the same record text")
        let made = LedgerPrep.batch(prepared, stored: false)
        for (r, p) in zip(spliced, made) {
            #expect(p.leaf == (try LedgerLeaf.bytes(r, entry: r.message.history.count - 1)), "its last entry")
            #expect(p.print == LedgerLeaf.contentPrint(r))
        }
        // Made for one kind of change, it is made again for the other.
        let asStored = prepared[0].preparingLedger(stored: true)
        #expect(LedgerPrep.batch([asStored], stored: true)[0].leaf == (try LedgerLeaf.bytes(spliced[0], entry: nil)))
    }

    @Test func aBatchOfBothKindsKeepsItsOrderAndMakesWhatWasNotMade() throws {
        var records: [EncodedMessage] = []
        for i in 0..<130 {
            var m = Fixtures.message(i, to: "x")
            try m.transition(to: .sending, event: "attempt", at: Fixtures.t0.adding(.seconds(1)))
            // Every third prepared for a record stored anew: not this change's leaf.
            records.append(i % 3 == 0 ? EncodedMessage(m, preparingLedger: true) : EncodedMessage(m))
        }
        let preps = LedgerPrep.batch(records, stored: false)
        for (r, p) in zip(records, preps) {
            #expect(p.leaf == (try LedgerLeaf.bytes(r, entry: r.message.history.count - 1)), "its last entry, in its place")
        }
    }
}
