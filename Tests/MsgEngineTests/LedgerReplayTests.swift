import MsgEngine
import MsgKit
import MsgSupport
import Testing

/// msg's own rules over a replayed message (`LedgerReplay`): the attempts a history
/// implies, a state written again after delivery, a status its history does not
/// end in. Events in, findings out; no store.
@Suite struct LedgerReplayTests {
    let t = Timestamp(milliseconds: 1_800_000_000_000)

    func event(_ name: String, _ status: Status, error: MsgError.Code? = nil) -> Message.Event {
        Message.Event(at: t, event: name, status: status, error: error.map { Message.Failure(MsgError($0, "x"), at: t) })
    }

    func message(_ history: [Message.Event], status: Status? = nil, attempts: Int? = nil) -> Message {
        var m = Message(id: "01a2", to: "ann", body: "hi", now: t)
        m.history = history
        m.status = status ?? history.last?.status ?? .queued
        m.attempts = attempts ?? LedgerReplay.impliedAttempts(history)
        return m
    }

    func state(at: Int = 7, n: Int) -> LedgerReplay.Leaf {
        LedgerReplay.Leaf(at: at, kind: .state, n: n, hash: Digest(bytes: [UInt8](repeating: 0, count: 32)))
    }

    @Test func attemptsAreCountedAsTheRetryPolicyCountsThem() {
        let history = [
            event("queued", .queued),
            event("attempt", .sending), event("failed", .failed, error: .remote),        // 1
            event("attempt", .sending), event("failed", .failed, error: .unreachable),   // not counted
            event("attempt", .sending), event("failed", .failed, error: .rateLimited),   // not counted
            event("attempt", .sending), event("recovered", .queued),                     // put back: not an outcome
            event("attempt", .sending), event("dead", .dead, error: .rejected),          // 2
            event("redriven", .queued),                                                  // from none again
            event("attempt", .sending), event("sent", .sent),                            // 1
            event("delivered", .delivered),                                              // a receipt, not a send
        ]
        #expect(LedgerReplay.impliedAttempts(history) == 1)
        #expect(LedgerReplay.impliedAttempts(Array(history.prefix(11))) == 2)
        #expect(LedgerReplay.impliedAttempts([event("queued", .queued)]) == 0)
        // Expired while sending: dead, no attempt.
        #expect(LedgerReplay.impliedAttempts([event("queued", .queued), event("attempt", .sending), event("expired", .dead)]) == 0)
    }

    @Test func aStateWrittenAgainAfterDeliveryIsNamed() {
        let sent = message([event("queued", .queued), event("attempt", .sending), event("sent", .sent)])
        let found = LedgerReplay.rules(sent, state: state(n: 3), before: 3)
        #expect(found.map(\.id) == [.stateAfterDelivery])
        #expect(found.first?.severity == .error && found.first?.leaf == 7 && found.first?.message == "01a2")
        // Its first leaf (stored so, or its first change since the ledger began): msg wrote it.
        #expect(LedgerReplay.rules(sent, state: state(n: 3), before: nil).isEmpty)
        // A history that went back (a claim put back) is written as a state.
        #expect(LedgerReplay.rules(sent, state: state(n: 3), before: 5).isEmpty)
        // An edit before delivery: a state over entries that were never delivered.
        let edited = message([event("queued", .queued), event("attempt", .sending), event("failed", .failed, error: .remote),
                              event("edited", .failed)])
        #expect(LedgerReplay.rules(edited, state: state(n: 4), before: 3).isEmpty)
    }

    @Test func aStatusItsHistoryDoesNotEndInIsAnErrorAndAttemptsAWarning() {
        let history = [event("queued", .queued), event("attempt", .sending), event("dead", .dead, error: .rejected)]
        let made = LedgerReplay.rules(message(history, status: .sent), state: state(n: 3), before: nil)
        #expect(made.map(\.id) == [.statusNotHistory] && made.first?.severity == .error)
        #expect(made.first?.text.contains("is sent, but its history ends dead (dead)") == true)
        let counted = LedgerReplay.rules(message(history, attempts: 5), state: state(n: 3), before: nil)
        #expect(counted.map(\.id) == [.attemptsNotHistory] && counted.first?.severity == .warning)
        #expect(counted.first?.line == "ledger: warning attempts-not-history: message 01a2 counts 5 attempts, its history 1")
    }

    @Test func findingsAreSaidErrorsFirstAndCounted() {
        let w = LedgerFinding(.attemptsNotHistory, severity: .warning, leaf: 1, "w")
        let e1 = LedgerFinding(.contentChanged, leaf: 9, "e1")
        let e2 = LedgerFinding(.leafOrphaned, leaf: 3, "e2")
        #expect(LedgerFinding.lines([w, e1, e2]) == ["ledger: error content-changed: e1", "ledger: error leaf-orphaned: e2",
                                                    "ledger: warning attempts-not-history: w"])
        #expect(LedgerFinding.lines([w, e1, e2], limit: 1) == ["ledger: error content-changed: e1", "ledger: and 2 more"])
        #expect(LedgerFinding.failure([w, e1, e2], what: "x").message == "ledger: x (2 errors)")
    }
}
