import MsgKit

/// What a run decides of its outcomes (Postfix's `qmgr_deliver_update()` is the
/// model: one function takes a delivery's status and decides all it means), as
/// events in and effects out: the shell records a slice (``OutcomeDesk``), tells
/// the run which changes applied (``FlushRun/recorded(_:applied:now:)``), and
/// carries out what it answers.
extension FlushRun {
    /// What the run says of one message of a recorded slice.
    package enum Verdict: Equatable, Sendable {
        /// Recorded sent (or delivered).
        case sent
        /// Recorded failed, to be tried again.
        case deferred
        /// Recorded dead (its attempts spent, a permanent failure, its expiry).
        case dead
        /// Put back as it was, not attempted: counted, not printed.
        case released
    }

    /// What the shell carries out after a slice is recorded, in order.
    package enum Effect: Equatable, Sendable {
        /// Counts, prints and tells the slice's message at this index.
        case tell(Int, Verdict)
        /// The destination's messages go to the workers one at a time (true) or in
        /// slices again (false).
        case caution(String, Bool)
        /// Takes back what waits for a worker for this destination (its breaker
        /// opened, it asked for a pause), puts it back as it was and tells the run
        /// (``FlushRun/withdrew(_:)``).
        case withdraw(String)
        /// The workers may go on with these destinations (those that failed).
        case done(Set<String>)
    }

    /// A slice's outcomes are recorded; `applied` says which changes the store took
    /// (compare-and-set: an outcome written again after an outage is never recorded
    /// twice). Each message is no longer in flight and its destination free in the
    /// scan; one put back as it was goes behind the scan; what an outcome teaches is
    /// noted for the next claim; a failure makes its destination cautious and a
    /// success ends that; a destination whose breaker opened or that asked for a
    /// pause is held in the scan, and what waits for it is withdrawn.
    package mutating func recorded(_ o: Dispatcher.Outcomes, applied: [Bool], now: Timestamp) -> [Effect] {
        received(o.changes.count)
        var effects: [Effect] = []
        for (i, (change, ok)) in zip(o.changes, applied).enumerated() {
            let item = o.items[i]
            let status = change.record.message.status
            // Put back as it was (not attempted): due again, behind the scan.
            if ok && o.outcomes[i] == nil && status != .dead { scan.putBehind(item.key) }
            release(item)
            guard ok else { continue }
            guard let outcome = o.outcomes[i] else {
                // Expired before its turn, or put back as it was.
                effects.append(.tell(i, status == .dead ? .dead : .released))
                continue
            }
            learn(outcome, of: item, now: now)
            if case .failed = outcome {
                if notes.cautious.insert(item.key).inserted { effects.append(.caution(item.key, true)) }
            } else if !notes.cautious.isEmpty, !o.failedKeys.contains(item.key), notes.cautious.remove(item.key) != nil {
                effects.append(.caution(item.key, false))
            }
            switch status {
            case .sent, .delivered: effects.append(.tell(i, .sent))
            case .dead: effects.append(.tell(i, .dead))
            default: effects.append(.tell(i, .deferred))
            }
        }
        for key in o.failedKeys.sorted() where holds(key, now: now) { effects.append(.withdraw(key)) }
        if !o.failedKeys.isEmpty { effects.append(.done(o.failedKeys)) }
        return effects
    }

    /// Claimed messages were taken back from the workers (a stop, a destination
    /// held) to be put back exactly as they were: no longer pending nor in flight,
    /// and behind the scan (what a breaker or a pause puts back is held in the scan
    /// until its time; what a stop puts back ends the run).
    package mutating func withdrew(_ items: [Claimer.Claimed]) {
        withdrew(items.count)
        for item in items {
            scan.putBehind(item.key)
            release(item)
        }
    }

    /// A message's outcome (or put-back) is recorded: no longer in flight, and its
    /// destination free in the scan (a hold that ends by itself, a pause or a
    /// cool-down, is woken by its time).
    private mutating func release(_ item: Claimer.Claimed) {
        notes.settled(item.record.message.id, key: item.key)
        scan.free(item.key)
    }

    /// Notes what an outcome says about its destination: for the store at the next
    /// claim, and for this run at once.
    private mutating func learn(_ outcome: DeliveryOutcome, of c: Claimer.Claimed, now: Timestamp) {
        // With every message its own destination there is nothing to learn; nor from a
        // success at a destination with nothing to forget (the common case, kept cheap).
        if book.rules.key == .id { return }
        if case .delivered = outcome, !c.probe, notes.known.isEmpty || (notes.known[c.key]?.isEmpty ?? true) { return }
        let book = self.book.of(c.key)
        for lesson in book.lessons(outcome, id: c.record.message.id, probe: c.probe, now: now) {
            notes.lessons.append((c.key, lesson))
            var s = notes.known[c.key] ?? DestinationState()
            _ = book.learn(lesson, into: &s, key: c.key, now: now)
            notes.known[c.key] = s
        }
    }

    /// Whether what waits for `key` must go back untouched: its breaker opened or it
    /// asked for a pause. Then the scan holds it too, until the hold ends.
    private mutating func holds(_ key: String, now: Timestamp) -> Bool {
        guard let s = notes.known[key] else { return false }
        guard case .hold(let hold) = book.of(key).verdict(s, busy: false, probeInFlight: false, now: now), hold.putsBack else { return false }
        scan.hold(key, hold, counting: false)
        return true
    }
}
