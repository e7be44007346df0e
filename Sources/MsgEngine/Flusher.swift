import MsgKit

/// A fast generator for jitter (SplitMix64).
struct JitterGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// `flush` and `retry`: takes due messages in FIFO order under a lease, records
/// `sending` durably, delivers them in order, and records each outcome.
///
/// Per batch there are two store commits (the claim, the outcomes) and one
/// transport call, so the cost per message is close to the transport's own.
/// A message is attempted at most once per run.
public final class Flusher {
    /// What to send and how.
    public struct Options: Sendable {
        /// The statuses taken: `queued` for flush, `failed` for retry.
        public var statuses: Set<Status> = [.queued]
        /// Only these ids (from arguments or stdin); nil for all.
        public var targets: [String]?
        /// At most this many messages.
        public var limit: Int?
        /// Ignore `not_before` and `next_attempt_at` (`retry --now`).
        public var ignoreDue = false
        /// The deadline of each attempt.
        public var deadline = MsgDuration.seconds(3)
        /// Messages per batch (one claim commit, one outcome commit).
        public var batchSize = 1024
        public init() {}
    }

    /// What a run did.
    public struct Summary: Sendable, Equatable {
        public var sent = 0
        public var deferred = 0
        public var dead = 0
        /// Targets that were not in a status this command takes.
        public var skipped = 0

        public init(sent: Int = 0, deferred: Int = 0, dead: Int = 0, skipped: Int = 0) {
            self.sent = sent
            self.deferred = deferred
            self.dead = dead
            self.skipped = skipped
        }
        /// 1 when a message became dead, else 75 when one was deferred, else 0.
        public var exitCode: Int32 { dead > 0 ? 1 : deferred > 0 ? 75 : 0 }

        mutating func add(_ other: Summary) {
            sent += other.sent
            deferred += other.deferred
            dead += other.dead
        }
    }

    private let store: any Store
    private let transport: any Transport
    private let policy: RetryPolicy
    private let options: Options
    private let faults: FaultPoints
    private let writer: NDJSONWriter
    private let clock: () -> Timestamp
    private let unit: () -> Double
    private var attempted: Set<String> = []

    /// A flusher; `clock` and `unit` (a random number in [0, 1), for jitter) are
    /// injected so tests control time.
    public init(store: any Store, transport: any Transport, policy: RetryPolicy, options: Options,
                faults: FaultPoints, writer: NDJSONWriter = NDJSONWriter(),
                clock: @escaping () -> Timestamp = { Timestamp.now() },
                unit: (() -> Double)? = nil) {
        self.store = store
        self.transport = transport
        self.policy = policy
        self.options = options
        self.faults = faults
        self.writer = writer
        self.clock = clock
        if let unit {
            self.unit = unit
        } else {
            // Jitter needs no cryptographic randomness: one seed, then a fast generator.
            var rng = JitterGenerator(seed: UInt64.random(in: 0...UInt64.max))
            self.unit = { Double(rng.next() >> 11) / Double(1 << 53) }
        }
    }

    /// Sends everything due now, batch by batch. - Throws: store errors.
    public func run() throws(MsgError) -> Summary {
        attempted = []
        var summary = Summary()
        var remaining = options.limit ?? Int.max
        while remaining > 0 {
            let batch = try flushBatch(limit: min(options.batchSize, remaining), into: &summary)
            if batch == 0 { break }
            remaining -= batch
        }
        if let targets = options.targets {
            summary.skipped = targets.count - targets.filter(attempted.contains).count
        }
        return summary
    }

    /// The earliest time a message this command takes becomes due, if any is waiting.
    public func nextDue() throws(MsgError) -> Timestamp? {
        var earliest: Timestamp?
        try store.list(Query(statuses: options.statuses, ids: options.targets.map(Set.init))) { (m) throws(MsgError) -> Bool in
            let due = [m.notBefore, m.nextAttemptAt].compactMap { $0 }.max() ?? m.createdAt
            if earliest.map({ due < $0 }) ?? true { earliest = due }
            return true
        }
        return earliest
    }

    private func flushBatch(limit: Int, into summary: inout Summary) throws(MsgError) -> Int {
        let now = clock()
        var query = Query(statuses: options.statuses, dueBy: options.ignoreDue ? nil : now)
        if let targets = options.targets { query.ids = Set(targets) }
        let leaseLength = MsgDuration(milliseconds: max(60_000, options.deadline.milliseconds * Int64(limit) * 2))
        let faults = self.faults
        // Read `attempted` in place: a local copy would be copied in full by the inserts below.
        let claimed = try store.claim(query, limit: limit) { (m) throws(MsgError) -> Message? in
            guard !self.attempted.contains(m.id) else { return nil }
            var x = m
            try x.transition(to: .sending, event: "attempt", at: now)
            x.lease = Owner.lease(now: now, duration: leaseLength)
            faults.pass(.beforeSending)
            return x
        }
        guard !claimed.isEmpty else { return 0 }
        for m in claimed { self.attempted.insert(m.id) }
        faults.pass(.afterSending, count: claimed.count)

        var outcomes = transport.deliver(claimed, deadline: options.deadline)
        faults.pass(.afterDelivery, count: claimed.count)
        if outcomes.count < claimed.count {
            // A transport that forgot some messages: they may or may not have gone out,
            // so they fail retryably (and the transport's dedup by id keeps it once).
            let missing = MsgError(.remote, "the transport reported no outcome for this message")
            outcomes += Array(repeating: .failed(missing, retryAfter: nil), count: claimed.count - outcomes.count)
        }

        let done = clock()
        var changes: [Change] = []
        changes.reserveCapacity(claimed.count)
        for (m, outcome) in zip(claimed, outcomes) {
            var x = m
            try policy.apply(outcome, to: &x, now: done, unit: unit())
            changes.append(Change(x, expected: .sending))
        }
        let applied = try store.update(changes)
        faults.pass(.afterSent, count: claimed.count)

        writer.flushEveryLine = false
        var line: [UInt8] = []
        for (change, ok) in zip(changes, applied) where ok {
            switch change.message.status {
            case .sent, .delivered: summary.sent += 1
            case .dead: summary.dead += 1
            default: summary.deferred += 1
            }
            // The record as just stored, without history, from the same encoding.
            line.removeAll(keepingCapacity: true)
            line.append(contentsOf: change.record.json[..<change.record.historyOffset])
            line.append(UInt8(ascii: "}"))
            try writer.writeRaw(line)
        }
        try writer.finish()
        return claimed.count
    }
}
