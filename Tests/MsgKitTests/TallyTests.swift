import MsgKit
import Testing

/// ``Tally``: what a store adds with each change equals what the record's history
/// says at the end, whatever the path; the counters of attempts only go up.
@Suite struct TallyTests {
    let t0 = Timestamp(milliseconds: 1_795_352_880_000)

    func message(to: String = "a@x") -> Message {
        Message(id: "0195f3a0-0000-7000-8000-000000000001", to: to, body: "b", now: t0)
    }

    /// A life of two failures, a recovery and a delivery, counted change by change,
    /// ends where counting the final record from scratch does.
    @Test func theDeltasOfALifeAddUpToItsHistory() throws {
        var m = message()
        var live = Tally()
        live.added(m)
        func step(_ next: Status, _ event: String, at seconds: Int64, code: String? = nil) throws {
            let old = m.status
            let failure = code.map { Message.Failure(code: $0, message: "x", retryable: true, at: t0) }
            try m.transition(to: next, event: event, at: t0.adding(.seconds(seconds)), error: failure)
            live.changed(from: old, to: m.to, into: m)
        }
        try step(.sending, "attempt", at: 1)
        try step(.failed, "failed", at: 2, code: "timeout")
        try step(.sending, "attempt", at: 10)
        try step(.queued, "recovered", at: 20, code: "stale_lease")
        try step(.sending, "attempt", at: 30)
        try step(.sent, "sent", at: 31)
        var scratch = Tally()
        scratch.added(m)
        scratch.attempts(in: m)
        #expect(live == scratch)
        #expect(live[.init(.messages, "", "sent")] == 1, "a sent record is counted by status alone")
        #expect(live[.init(.messages, "a@x", "queued")] == 0)
        #expect(live.figures[.init(.messages, "a@x", "queued")] == nil, "a figure that reaches zero is gone")
        #expect(live[.init(.attempts, "failed", "timeout")] == 1)
        #expect(live[.init(.attempts, "queued", "stale_lease")] == 1)
        #expect(live[.init(.attempts, "sent", "")] == 1)
        #expect(live[.init(.deliveries, "a@x")] == 1)
        #expect(live[.init(.failures, "a@x")] == 1)
        // 31 s from creation to the send: the bucket of at most 60 s (index 7).
        #expect(live[.init(.latency, "7")] == 1)
        #expect(live[.init(.latencySum, "")] == 31_000)
    }

    /// Only the first send is timed (one marked sent by hand counts as one); a
    /// change that stays in one status counts nothing; a new recipient moves the
    /// record's count.
    @Test func onlyTheFirstSendIsTimedAndAnEditMovesTheCount() throws {
        var m = message()
        try m.transition(to: .sending, event: "attempt", at: t0)
        try m.transition(to: .failed, event: "failed", at: t0.adding(.seconds(1)))
        try m.transition(to: .sending, event: "attempt", at: t0.adding(.seconds(2)))
        try m.transition(to: .sent, event: "sent", at: t0.adding(.seconds(3)))
        var t = Tally()
        t.changed(from: .sending, to: m.to, into: m)
        #expect(t[.init(.attempts, "sent", "")] == 1)
        #expect(t[.init(.latency, "5")] == 1, "3 s: the bucket of at most 5 s")
        var marked = m
        marked.history.insert(Message.Event(at: t0, event: "marked", status: .sent), at: 1)
        var again = Tally()
        again.changed(from: .sending, to: marked.to, into: marked)
        #expect(again[.init(.attempts, "sent", "")] == 1)
        #expect(!again.figures.keys.contains { $0.kind == .latency || $0.kind == .latencySum }, "sent before: not timed again")
        var scratch = Tally()
        scratch.attempts(in: marked)
        #expect(scratch[.init(.attempts, "sent", "")] == 1)
        #expect(!scratch.figures.keys.contains { $0.kind == .latency })

        var edit = Tally()
        var moved = message()
        edit.changed(from: .queued, to: moved.to, into: moved)
        #expect(edit.isEmpty)
        moved.to = "b@x"
        edit.changed(from: .queued, to: "a@x", into: moved)
        #expect(edit.figures == [.init(.messages, "a@x", "queued"): -1, .init(.messages, "b@x", "queued"): 1])
    }

    /// Log text reads back as the figures it was made of, whatever the names hold
    /// (the separators, digits, newlines, non-ASCII); texts joined read as their sum;
    /// text cut short reads as far as it is whole.
    @Test func logTextReadsBackWholeAndJoined() {
        var t = Tally()
        t.add(3, to: .init(.messages, "a:1;b@x", "queued"))
        t.add(-2, to: .init(.messages, "12:ünï\ncødé", "failed"))
        t.add(7, to: .init(.attempts, "failed", "time;out:9"))
        t.add(1_234_567_890_123, to: .init(.latencySum, ""))
        t.add(0, to: .init(.deliveries, "zero@x"))
        var text: [UInt8] = []
        t.logText(into: &text)
        var back = Tally()
        #expect(text.withUnsafeBufferPointer { back.add(logText: $0) })
        #expect(back == t)
        #expect(back.figures.count == 4, "zeros are not written")
        var twice = Tally()
        let joined = text + text
        #expect(joined.withUnsafeBufferPointer { twice.add(logText: $0) })
        var doubled = t
        doubled.add(t)
        #expect(twice == doubled)
        var cut = Tally()
        #expect(!Array(text.dropLast(3)).withUnsafeBufferPointer { cut.add(logText: $0) })
        #expect(cut.figures.count == 3, "the whole figures before the cut")
        #expect(t.logText == String(decoding: text, as: UTF8.self))
    }
}
