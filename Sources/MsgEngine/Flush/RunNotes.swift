import MsgKit

/// What a run notes between its claims and its outcomes: the messages it has in
/// flight (and how many per destination, when a destination's share of the run
/// is bounded), the lessons its outcomes taught that the next claim stores, the
/// destination states as the run knows them, and the destinations it made cautious.
///
/// A value of the run's state machine (``FlushRun``), which alone changes it: a
/// claim (``Claimer``) is given a copy to read.
package struct RunNotes {
    /// Claimed and not yet recorded.
    package private(set) var inFlight: Set<String> = []
    /// Per destination, how many of ``inFlight``; kept only when bounded.
    package private(set) var perKey: [String: Int] = [:]
    /// Outcomes' lessons not yet in the store, in order.
    package var lessons: [(key: String, lesson: DestinationBook.Lesson)] = []
    /// The states as this run knows them.
    package var known: [String: DestinationState] = [:]
    /// Destinations failing lately, handed out one message at a time (so that a
    /// breaker sees each outcome); kept here too, so that a success costs the
    /// scheduler's lock only when one is.
    package var cautious: Set<String> = []
    /// Whether ``perKey`` is kept (several workers: ``Claimer/maxPerKey``).
    package let countsPerKey: Bool

    package init(countsPerKey: Bool) { self.countsPerKey = countsPerKey }

    /// A message claimed: in flight.
    package mutating func took(_ id: String, key: String) {
        inFlight.insert(id)
        if countsPerKey { perKey[key, default: 0] += 1 }
    }

    /// A message's outcome (or put-back) is recorded: no longer in flight.
    package mutating func settled(_ id: String, key: String) {
        inFlight.remove(id)
        if countsPerKey, let n = perKey[key] { perKey[key] = n > 1 ? n - 1 : nil }
    }
}
