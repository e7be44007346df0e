import MsgKit

extension Flusher {
    /// What a run did.
    public struct Summary: Sendable, Equatable {
        public var sent = 0
        public var deferred = 0
        public var dead = 0
        /// Targets that were not in a status this command takes, or not due, in the
        /// order given.
        public var notTaken: [String] = []
        /// How many targets were not taken.
        public var skipped: Int { notTaken.count }
        /// Messages claimed but not attempted because of a stop request: put back as
        /// they were before the claim.
        public var released = 0
        /// Why the transport can deliver nothing as configured (a `config` outcome):
        /// the run stopped there and put back what it had not attempted.
        public var misconfigured: MsgError?
        /// Damaged records met (msg-record(5)): set aside as dead, never sent.
        public var damaged: [String] = []
        /// Why the run stopped early, if it did.
        public var stopped: StopRequest.Reason?
        /// The error of the last message deferred or dead, for the one-line summary.
        public var lastFailure: Message.Failure?
        /// Messages left queued because their destination's breaker is open or it
        /// asked for a pause, with one line each about why.
        public var heldBack = 0
        public var holds: [String] = []
        /// Breakers opened and closed, one line each.
        public var notices: [String] = []
        /// The messages left failing, kept when the run was asked to (a watch, whose
        /// runs are added together: ``Flusher/run(progress:countingMessages:)``).
        var left: MessagesLeft?

        /// Notes that message `id` was left failing, or was settled (sent, dead).
        mutating func settle(_ id: String, failing: Bool) {
            left?.note(id, failing: failing)
        }

        public init(sent: Int = 0, deferred: Int = 0, dead: Int = 0) {
            self.sent = sent
            self.deferred = deferred
            self.dead = dead
        }
        /// Equal counts (the last error is only for display).
        public static func == (a: Summary, b: Summary) -> Bool {
            (a.sent, a.deferred, a.dead, a.skipped) == (b.sent, b.deferred, b.dead, b.skipped)
        }

        /// 1 when a message became dead (a damaged record counts), else 75 when one
        /// was deferred, else 0.
        public var exitCode: Int32 { dead > 0 || !damaged.isEmpty ? 1 : deferred + heldBack > 0 ? 75 : 0 }

        /// Says which damaged records of `store` were met, one line each.
        public func reportDamaged(in store: String, to reporter: Reporter) {
            for id in damaged {
                reporter.say("record \(id) in \(store) is damaged: it was set aside as dead with its text kept, and not sent (msg-record(5), DAMAGED RECORDS)")
            }
        }

        mutating func add(_ other: Summary) {
            sent += other.sent
            damaged += other.damaged
            deferred += other.deferred
            dead += other.dead
            if let later = other.left {
                left = left ?? MessagesLeft()
                left?.add(later)
            }
            released += other.released
            stopped = other.stopped ?? stopped
            misconfigured = other.misconfigured ?? misconfigured
            lastFailure = other.lastFailure ?? lastFailure
            heldBack = other.heldBack
            holds = other.holds
        }

        /// Says which destinations held messages back, one line each.
        public func reportHolds(to reporter: Reporter) {
            for line in holds { reporter.say(line) }
        }

        /// What a user reads on stderr when a stop request ended the run, e.g.
        /// `stopping (SIGTERM): 3 sent, 0 deferred, 0 dead; 1021 not attempted were put back untouched`,
        /// or for a watch `stopping (SIGTERM): 30 sent, 2 left to retry, 0 dead`.
        public var stopLine: String? {
            guard let stopped else { return nil }
            let back = released > 0 ? "; \(released) not attempted were put back untouched" : ""
            // Runs added together (a watch) count messages by what they are left as.
            let waiting = left.map { "\($0.failing.count) left to retry" } ?? "\(deferred) deferred"
            return "stopping (\(stopped.name)): \(sent) sent, \(waiting), \(dead) dead\(back)"
        }

        /// What a person at a terminal reads when everything went out: `3 sent`,
        /// or `nothing was due`.
        public var doneLine: String {
            sent + released + heldBack == 0 ? "nothing was due" : "\(sent) sent"
        }

        /// What a user reads on stderr when not everything went out, e.g.
        /// `3 sent, 5 deferred, 0 dead; last error: unreachable: cannot connect …`; nil when all did.
        public var failureLine: String? {
            guard deferred + dead > 0 else { return nil }
            let last = lastFailure.map { "; last error: \($0.code): \($0.message)" } ?? ""
            return "\(sent) sent, \(deferred) deferred for a later retry, \(dead) dead\(last)"
        }
    }
}
