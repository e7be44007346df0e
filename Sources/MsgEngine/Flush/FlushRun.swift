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
    package internal(set) var notes: RunNotes
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
