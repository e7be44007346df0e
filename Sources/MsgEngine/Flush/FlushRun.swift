import MsgKit

/// The life of one `flush` or `retry` run as a state machine (PostgresNIO's
/// `ConnectionStateMachine` is the model): events in, actions out. It owns the
/// run's state (where the claims are in the queue, ``scan``; what is in flight and
/// what the outcomes taught, ``notes``; which destinations are cautious) and makes
/// every decision of the run; its shell (``Flusher``) asks what to do next
/// (``next(now:stopAsked:)``), does that against the store and the delivery
/// workers, and tells it what came of it: a claim (``claimed(_:)``), a slice's
/// outcomes recorded (``recorded(_:applied:now:)``, which answers with the
/// ``Effect``s to carry out), messages withdrawn (``withdrew(_:)``), no outcome in
/// time (``timedOut()``), the store back after an outage (``storeCameBack()``). It
/// touches no store, no thread and no clock of its own, so each rule is tested alone.
///
/// The rules: claim a batch while fewer than a batch are pending (at most the
/// run's pace and its limit); when nothing more is due and nothing is pending, wait
/// for a destination that will be due within the run's patience (a token, a
/// pause's end) or the next token of the pace, else finish; while messages are
/// pending, await their outcomes, only until such a time. On a stop request, take
/// back what waits for a worker once, claim nothing more, and finish when what was
/// handed out is recorded.
package struct FlushRun: Sendable {
    /// What the shell does next.
    package enum Action: Equatable, Sendable {
        /// Claim up to this many messages and hand them to the workers.
        case claim(Int)
        /// Take back everything waiting for a worker and put it back as it was (a stop).
        case withdrawAll
        /// Wait until this time (or a stop request).
        case wait(until: Timestamp)
        /// Await the next outcomes, until this time at the latest (nil: as long as it takes).
        case receive(until: Timestamp?)
        /// The run is over.
        case finish
    }

    /// Messages per claim.
    let batchSize: Int
    /// The most messages claimed and not yet recorded.
    let maxPending: Int
    /// The longest the run waits for a destination before it ends.
    let maxWait: MsgDuration
    /// At most this many messages a period for the whole run (`retry --pace`): the
    /// rate, its tokens, and when the next one comes when the last claim was cut short.
    private var pace: (rate: Rate?, bucket: DestinationState, wake: Timestamp?)

    /// Messages the run may still take (its limit).
    package private(set) var remaining: Int
    /// Claimed and handed to the workers, not yet recorded.
    package private(set) var pending = 0
    /// A stop was asked for: nothing more is claimed.
    package private(set) var stopping = false
    /// Whether a claim may find something now (something changed since the last
    /// one that found nothing).
    private var claimAgain = true
    /// Where the claims are in the queue, and the destinations held.
    package var scan: ClaimScan
    /// What is in flight, what the outcomes taught, the states as the run knows
    /// them, which destinations are cautious.
    package private(set) var notes: RunNotes
    /// The run's rules per destination.
    let book: DestinationBook

    package init(batchSize: Int, limit: Int?, maxWait: MsgDuration, pace: Rate?, scan: ClaimScan = ClaimScan(),
                 rules: DeliveryRules = DeliveryRules(), countsPerKey: Bool = false) {
        self.scan = scan
        notes = RunNotes(countsPerKey: countsPerKey)
        book = DestinationBook(rules: rules)
        self.batchSize = batchSize
        maxPending = batchSize * 2
        remaining = limit ?? Int.max
        self.maxWait = maxWait
        self.pace = (pace, DestinationState(), nil)
    }

    /// What to do now. `stopAsked`: a stop request, or the transport found
    /// misconfigured. The scan says when a destination it holds will take messages
    /// again by itself (``ScanHolds/wake``).
    package mutating func next(now: Timestamp, stopAsked: Bool) -> Action {
        let scanWake = scan.holds.wake
        if !stopping && stopAsked {
            stopping = true
            return .withdrawAll
        }
        if !stopping && claimAgain && remaining > 0 && pending <= maxPending / 2 {
            let want = paced(min(batchSize, remaining, maxPending - pending), now: now)
            if want > 0 { return .claim(want) }
            claimAgain = false
        }
        if pending == 0 {
            if !stopping, remaining > 0, let until = pace.wake {
                claimAgain = true
                return .wait(until: until)
            }
            guard !stopping, remaining > 0, let until = scanWake,
                  until.milliseconds - now.milliseconds <= maxWait.milliseconds else { return .finish }
            claimAgain = true
            return .wait(until: until)
        }
        // With a destination to wait for, outcomes are awaited only until then.
        return .receive(until: stopping ? nil : [scanWake, pace.wake].compactMap { $0 }.min())
    }

    /// A claim took `taken` messages to send and found `expired` past their expiry
    /// (stored dead by the claim).
    package mutating func claimed(taken: Int, expired: Int) {
        remaining -= taken + expired
        if taken + expired > 0 {
            pending += taken
        } else {
            // Nothing more is due: no claim until something changes, no token to wait for.
            claimAgain = false
            pace.wake = nil
        }
    }

    /// The outcomes of `count` messages came back (recorded, or put back as they were).
    package mutating func received(_ count: Int) {
        pending -= count
        claimAgain = true
    }

    /// `count` messages waiting for a worker were taken back (a stop, a breaker
    /// that opened, a pause a destination asked for).
    package mutating func withdrew(_ count: Int) {
        pending -= count
    }

    /// No outcome came before the time ``Action/receive(until:)`` gave: a claim may
    /// find something now.
    package mutating func timedOut() {
        claimAgain = true
    }

    /// How many of `want` messages the run's pace lets go at `now`, taking their
    /// tokens; when fewer, the pace's `wake` is when the next token comes. A token the
    /// claim does not use is lost, so the pace is never passed.
    private mutating func paced(_ want: Int, now: Timestamp) -> Int {
        guard let rate = pace.rate else { return want }
        pace.wake = nil
        for taken in 0..<want {
            if let next = pace.bucket.takeToken(now: now, rate: rate) {
                pace.wake = next
                return taken
            }
        }
        return want
    }
}

/// What a run decides around its claims, as events in and actions out: where the
/// scan starts again before a claim (``FlushRun/claimStarts(token:now:floors:)``,
/// with the store's answers about other processes' commits), what a claim gave
/// (``FlushRun/claimed(_:)``), and the store back after an outage
/// (``FlushRun/storeCameBack()``).
extension FlushRun {
    /// What the shell does before a claim reads the queue.
    package enum ScanStart: Equatable, Sendable {
        /// Claim from the scan as it is.
        case ready
        /// Ask the store how far back the commits since this mark wrote (nil: only
        /// its mark now) and tell the run (``FlushRun/floorAnswered(_:since:)``).
        case askFloor(since: Int64?)
    }

    /// A claim is about to read the queue; `token` is the store's change token now,
    /// `floors` whether the store says where commits changed the queue
    /// (``JournalStore/changeFloor(since:)``). The scan starts again where it must
    /// (``ClaimScan/restart(token:at:)``): from the first message when a time came;
    /// when only other processes committed, from where their commits changed the
    /// queue (the store is asked); and from the first message a destination whose
    /// hold the run's own outcome ended left behind (``ClaimScan/releaseFreed()``).
    package mutating func claimStarts(token: UInt64?, now: Timestamp, floors: Bool) -> ScanStart {
        let restart = scan.restart(token: token, at: now)
        scan.token = token
        switch restart {
        case .goOn:
            if !scan.releaseFreed() { scan.rewind() }
        case .fromFirst:
            scan.rewind()
        case .changedElsewhere:
            if scan.releaseFreed(), floors, let mark = scan.floorMark { return .askFloor(since: mark) }
            scan.rewind()
        }
        // The mark from which the next change elsewhere is asked about: read before
        // this claim reads the queue, so what commits after it is asked about then.
        return floors && scan.floorMark == nil ? .askFloor(since: nil) : .ready
    }

    /// The store's answer to ``ScanStart/askFloor(since:)``: the scan goes back to
    /// just before the lowest message the commits since `since` wrote (from the
    /// first when they may have changed anything, or a hold to release has no
    /// first message on record), and asks from the store's mark now next time.
    package mutating func floorAnswered(_ change: ChangeFloor, since: Int64?) -> ScanStart {
        if since != nil {
            switch change.floor {
            case .none: break
            case .from(let position): if !scan.rewind(before: position) { scan.rewind() }
            case .all: scan.rewind()
            }
        }
        scan.floorMark = change.mark
        return .ready
    }

    /// Whether a claim of `limit` can find nothing the last claim did not find (its
    /// scan read to the end since it last started again) and has no lessons to store.
    package func claimFindsNothing(_ limit: Int) -> Bool {
        scan.exhausted && notes.lessons.isEmpty && limit > 0
    }

    /// A claim committed: its scan is the run's, the lessons it stored are gone from
    /// the notes and the states it read are known; what it took is in flight.
    package mutating func claimed(_ round: Claimer.Round) {
        if let claimedScan = round.scan { scan = claimedScan }
        notes.lessons.removeFirst(min(round.lessonsStored, notes.lessons.count))
        for (key, s) in round.known { notes.known[key] = s }
        for c in round.taken { notes.took(c.record.id, key: c.key) }
        claimed(taken: round.taken.count, expired: round.expired.count)
    }

    /// Whether lessons of the run's outcomes wait to be stored (at its end, a claim
    /// of nothing stores them).
    package var hasLessons: Bool { !notes.lessons.isEmpty }

    /// The mark under which the run's scan is left for the next run of another
    /// process (``ScanHint``), or nil: a run that ended early (stopped,
    /// misconfigured) or whose own outcomes freed a hold not yet released cannot
    /// vouch for its scan. The mark is the one of the scan's last look: the scan
    /// accounts for every commit up to it, and the commits after it, this run's own
    /// outcomes included (a `retry --now` leaves failed messages behind its scan,
    /// for the next run), are the next run's floor.
    package func hintMark(endedEarly: Bool) -> Int64? {
        guard !endedEarly, !scan.holds.held.values.contains(where: \.freed) else { return nil }
        return scan.floorMark
    }

    /// A message the run's statuses take becomes due at `time` (one whose retry
    /// time this run's outcomes set may lie behind the scan): that time starts the
    /// scan again.
    package mutating func becomesDue(_ time: Timestamp) {
        scan.nextDue = min(scan.nextDue ?? time, time)
    }

    /// The store came back after an outage: a claim whose commit reached it while
    /// its answer was lost may have left messages `sending` under this process's
    /// lease that were never handed out; the shell puts back those not among the
    /// returned ids (the run's own in flight). They are queued again behind the
    /// scan, so it starts again to find them.
    package mutating func storeCameBack() -> Set<String> {
        scan.rewind()
        return notes.inFlight
    }
}

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
            let status = change.record.status
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
        notes.settled(item.record.id, key: item.key)
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
        for lesson in book.lessons(outcome, id: c.record.id, probe: c.probe, now: now) {
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
