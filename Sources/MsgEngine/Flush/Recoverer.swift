import MsgKit

/// `recover`: resolves messages left in `sending` by a crash.
///
/// A message qualifies when it has been `sending` longer than `staleAfter` and its
/// lease owner is gone (dead process on this host) or its lease has ended. If the
/// transport's `lookup` says the id was delivered, it becomes `sent`; otherwise it
/// goes back to `queued`. Either way it gets a `recovered` history event. The whole
/// pass is one store claim, so it is safe while `flush` runs and when run twice.
public struct Recoverer {
    /// What a pass did (or would do, in a dry run).
    public struct Summary: Sendable, Equatable {
        public var markedSent = 0
        public var requeued = 0
        /// Of those queued again, those the transport cannot tell about (no
        /// lookup, as smtp://): sent again, each may arrive twice.
        public var unchecked = 0
        /// Left alone: sending for less than `staleAfter`.
        public var young = 0
        /// Left alone: their sender is still running.
        public var alive = 0
        public var total: Int { markedSent + requeued }

        public init(markedSent: Int = 0, requeued: Int = 0, young: Int = 0, alive: Int = 0) {
            self.markedSent = markedSent
            self.requeued = requeued
            self.young = young
            self.alive = alive
        }
    }

    private let store: any Store
    private let transport: any Transport
    private let staleAfter: MsgDuration
    private let clock: () -> Timestamp
    /// A lease's sender, the key of its one liveness check.
    private struct OwnerKey: Hashable {
        var host: String
        var pid: Int32
        var until: Int64
    }
    /// The most records recovered in one claim (one commit).
    static let chunk = 8192

    /// A recoverer. - Parameter staleAfter: how long a message must have been sending.
    public init(store: any Store, transport: any Transport, staleAfter: MsgDuration, clock: @escaping () -> Timestamp = { Timestamp.now() }) {
        self.store = store
        self.transport = transport
        self.staleAfter = staleAfter
        self.clock = clock
    }

    /// Runs one pass; `dryRun` decides without storing. Each resolved record is passed
    /// to `report`, encoded as stored (or as it would be). - Throws: store errors; a
    /// transport that cannot be asked.
    /// `targets`: only these messages (nil: every one sending).
    public func run(dryRun: Bool, targets: [String]? = nil, report: (EncodedMessage) throws(MsgError) -> Void) throws(MsgError) -> Summary {
        let now = clock()
        let query = Query(statuses: [.sending], updatedBy: Timestamp(milliseconds: now.milliseconds - staleAfter.milliseconds), ids: targets.map(Set.init))
        var summary = Summary()
        let transport = self.transport
        // Ask the transport about every candidate in one pass, before taking the
        // store's write lock; a message that became a candidate since is asked alone.
        // Ids are read from the stored text (msg always writes `id` first) without
        // decoding; liveness is checked by the claim below.
        var candidates: [String] = []
        try store.listJSON(query, includeHistory: false) { (json) throws(MsgError) -> Bool in
            if let id = RecordLayout.id(in: json) { candidates.append(id) }
            return true
        }
        // What is sending but too young to judge, said so a run right after a crash
        // does not look like a run that found nothing.
        summary.young = max(0, try store.count(Query(statuses: [.sending], ids: targets.map(Set.init))) - candidates.count)
        var known: [String: Bool?] = [:]
        known.reserveCapacity(candidates.count)
        for (id, answer) in zip(candidates, try transport.lookup(candidates)) { known[id] = answer }
        // Claims of at most `chunk` records, each printed when committed: memory does
        // not grow with the number of records, and each record is read once.
        var owners: [OwnerKey: Bool] = [:]
        var position: ClaimPosition?
        while true {
            var decided: [Message] = []
            let result = try store.claim(ClaimRequest(query: query, limit: Self.chunk, after: position, chunk: 1024)) { (m) throws(MsgError) -> Message? in
                // A damaged record is set aside as dead by the store, not recovered.
                if m.isDamaged { return nil }
                if let lease = m.lease {
                    // One look per sender, not per message.
                    let owner = OwnerKey(host: lease.host, pid: lease.pid, until: lease.until.milliseconds)
                    let alive = owners[owner] ?? Owner.isAlive(lease, now: now)
                    owners[owner] = alive
                    if alive {
                        summary.alive += 1
                        return nil
                    }
                }
                var x = m
                x.lease = nil
                let answer: Bool? = if let asked = known[m.id] { asked } else { try transport.lookup(m.id) }
                if answer == true {
                    try x.transition(to: .sent, event: "recovered", at: now)
                    summary.markedSent += 1
                } else {
                    try x.transition(to: .queued, event: "recovered", at: now)
                    summary.requeued += 1
                    if answer == nil { summary.unchecked += 1 }
                }
                if dryRun {
                    decided.append(x)
                    return nil
                }
                return x
            }
            // As stored, from the bytes the store wrote; a dry run encodes what it decided.
            for r in result.taken { try report(r) }
            for m in decided { try report(EncodedMessage(m)) }
            position = result.position
            if result.reachedEnd || position == nil { break }
        }
        return summary
    }
}

/// `retry --dead`: returns dead messages to `queued` (as SQS redrive), history kept,
/// attempts reset so the retry limit applies afresh.
public enum Redrive {
    /// Redrives dead messages (only `targets` when given); damaged records (msg-record(5))
    /// are left dead. Each gets `expiresAt` as its new expiry when given; else an
    /// expiry already past is dropped (it would only expire again).
    /// - Returns: how many were redriven, and the damaged ones left.
    /// - Throws: store errors.
    /// At most `limit` are redriven; `reason`, when given, is kept in each `redriven` event.
    public static func run(store: any Store, targets: [String]?, limit: Int = .max, now: Timestamp, expiresAt: Timestamp? = nil,
                           reason: String? = nil,
                           report: (EncodedMessage) throws(MsgError) -> Void) throws(MsgError) -> (moved: Int, damaged: [String]) {
        var damaged: [String] = []
        let moved = try store.claim(Query(statuses: [.dead], ids: targets.map(Set.init)), limit: limit) { (m) throws(MsgError) -> Message? in
            if m.isDamaged {
                damaged.append(m.id)
                return nil
            }
            var x = m
            x.attempts = 0
            x.nextAttemptAt = nil
            if let expiresAt {
                x.expiresAt = expiresAt
            } else if let old = x.expiresAt, old <= now {
                x.expiresAt = nil
            }
            try x.transition(to: .queued, event: "redriven", at: now)
            if let reason { x.history[x.history.count - 1].extra.append(.init("reason", .string(reason))) }
            return x
        }
        for m in moved { try report(m) }
        return (moved.count, damaged)
    }
}
