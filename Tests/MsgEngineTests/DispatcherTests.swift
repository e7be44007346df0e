import MsgEngine
import MsgKit
import MsgKitTesting
import Testing

/// A transport that answers from a script, noting what it was handed: fault
/// injection for ``Dispatcher/deliver(_:_:_:_:)``.
final class ScriptedTransport: Transport {
    let answers: [DeliveryOutcome]
    private(set) var handed: [String] = []
    init(_ answers: [DeliveryOutcome]) { self.answers = answers }
    func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> [DeliveryOutcome] {
        handed += records.map(\.message.id)
        return Array(answers.prefix(records.count))
    }
}

/// The dispatcher's work on one slice, alone: claimed messages and a transport's
/// answers in, the changes and outcomes the run records out. No worker thread, no
/// store, no `Flusher`.
@Suite struct DispatcherTests {
    let now = Fixtures.t0.adding(.seconds(10))

    func slice(_ n: Int) throws -> [Claimer.Claimed] {
        try (0..<n).map { i in
            let m = Fixtures.message(i, to: "k\(i)")
            var x = m
            try x.transition(to: .sending, event: "attempt", at: Fixtures.t0.adding(.seconds(1)))
            return Claimer.Claimed(record: EncodedMessage(x), original: EncodedMessage(m), key: "k\(i)", probe: false)
        }
    }

    func delivery(_ misconfigured: FirstError = FirstError()) throws -> Dispatcher.Delivery {
        let now = self.now
        return Dispatcher.Delivery(policy: RetryPolicy(), faults: try FaultPoints(environment: nil), clock: { now }, unit: { 0.5 },
                                   deadline: .seconds(3), batchSize: 10, stop: StopRequest(watchesSignals: false),
                                   misconfigured: misconfigured, progress: nil, delivered: MsgEngine.Counter())
    }

    func deliver(_ items: [Claimer.Claimed], _ t: ScriptedTransport, _ d: Dispatcher.Delivery) -> Dispatcher.Outcomes {
        var sizer = SliceSizer(maximum: 10)
        return Dispatcher.deliver(items, SerializedTransport(t), d, &sizer)
    }

    @Test func eachOutcomeBecomesItsMessagesChange() throws {
        let items = try slice(2)
        let failure = DeliveryOutcome.failed(MsgError(.timeout, "slow"), retryAfter: nil)
        let o = deliver(items, ScriptedTransport([.delivered(confirmed: true), failure]), try delivery())
        #expect(o.changes.map(\.record.message.status) == [.delivered, .failed])
        #expect(o.changes.allSatisfy { $0.expected == .sending })
        #expect(o.outcomes == [.delivered(confirmed: true), failure])
        #expect(o.failedKeys == ["k1"])
        #expect(o.changes[1].record.message.attempts == 1 && o.changes[1].record.message.lastError?.code == "timeout")
    }

    /// A transport that reports fewer outcomes than it was handed: the rest may or
    /// may not have gone out, so they fail retryably (never counted as sent).
    @Test func outcomesATransportLeftOutFailRetryably() throws {
        let items = try slice(3)
        let o = deliver(items, ScriptedTransport([.delivered(confirmed: false)]), try delivery())
        #expect(o.changes.map(\.record.message.status) == [.sent, .failed, .failed])
        #expect(o.changes[2].record.message.lastError?.message == "the transport reported no outcome for this message")
        #expect(o.failedKeys == ["k1", "k2"])
    }

    /// A `config` outcome: nothing can go out as configured. That message and the
    /// rest go back as they were (no attempt counted), and the run is told.
    @Test func aConfigOutcomePutsItAndTheRestBackUnattempted() throws {
        let items = try slice(3)
        let misconfigured = FirstError()
        let refused = DeliveryOutcome.failed(MsgError(.config, "refused: check the token"), retryAfter: nil)
        let o = deliver(items, ScriptedTransport([.delivered(confirmed: false), refused, .delivered(confirmed: false)]),
                        try delivery(misconfigured))
        #expect(o.changes.map(\.record) == [o.changes[0].record, items[1].original, items[2].original])
        #expect(o.changes[0].record.message.status == .sent)
        #expect(o.outcomes.map { $0 == nil } == [false, true, true])
        #expect(o.failedKeys.isEmpty, "put back, not failed")
        #expect(misconfigured.error?.message == "refused: check the token")
    }

    /// A message past its expiry is not handed to the transport: it is made dead.
    @Test func anExpiredMessageIsDeadAndNeverHandedOver() throws {
        var items = try slice(2)
        var late = items[0].record.message
        late.expiresAt = Fixtures.t0.adding(.seconds(5))
        items[0] = Claimer.Claimed(record: EncodedMessage(late), original: items[0].original, key: "k0", probe: false)
        let t = ScriptedTransport([.delivered(confirmed: false)])
        let o = deliver(items, t, try delivery())
        #expect(t.handed == [items[1].record.message.id], "only the live one")
        #expect(o.changes.map(\.record.message.status) == [.dead, .sent])
        #expect(o.changes[0].record.message.lastError?.code == "expired")
        #expect(o.outcomes.map { $0 == nil } == [true, false])
    }
}
