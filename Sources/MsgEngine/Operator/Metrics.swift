import MsgKit

/// What `msg metrics` tells Prometheus about a store (docs/DESIGN.md 6), from the
/// counts the store keeps with every change (``Tally``) and its destination states;
/// from every record when the store keeps no counts or destinations are not by
/// recipient:
///
/// - `msg_messages{status}`: messages by status (every status, zeros too);
/// - `msg_queue_due_messages` and `msg_queue_lag_seconds`: messages due now
///   (queued or failed, not before their time; one past its expiry until a flush
///   marks it dead) and the age of the oldest of them, leaving out destinations
///   suspended on purpose (a planned `suspend --for 2h` is no lag to alert on);
///   `msg_queue_suspended_due_messages` counts those;
/// - `msg_attempts_total{outcome,code}`: attempts by how they ended (sent, failed,
///   dead, or queued again by recover) and error code;
/// - `msg_enqueue_to_sent_seconds`: a histogram from a message's creation to the
///   attempt that first sent it;
/// - `msg_destination_deliveries_total` and `msg_destination_failures_total`
///   `{destination}` for the `top` busiest destinations only, the rest summed as
///   `destination="(other)"`, so the series stay bounded;
/// - `msg_destinations{state}`: destinations suspended, paused, with an open or
///   half-open breaker; `msg_destination_state{destination,state}` names them
///   (at most `top`).
///
/// The counters of attempts never go down where the store counts: `queue purge`
/// leaves them. Read from the records, they count what the store still holds.
public struct Metrics {
    public static let latencyBounds = Tally.latencyBounds

    private let store: any Store
    private let key: DestinationKey
    private let top: Int

    public init(store: any Store, key: DestinationKey = .recipient, top: Int = 20) {
        self.store = store
        self.key = key
        self.top = max(1, top)
    }

    /// What the exposition says, gathered from the store's counts or its records.
    struct Figures {
        var byStatus: [Status: Int] = [:]
        var due = 0
        var suspendedDue = 0
        var oldestDue: Timestamp?
        var attempts: [String: [String: Int]] = [:]
        var latency = [Int](repeating: 0, count: Metrics.latencyBounds.count + 1)
        /// Milliseconds.
        var latencySum = 0
        var deliveries: [String: Int] = [:]
        var failures: [String: Int] = [:]
    }

    /// The exposition text at `now`: from the counts the store keeps
    /// (``JournalStore/counts(now:excluding:)``) when it keeps them and destinations are by
    /// recipient; else read from every record. - Throws: store errors.
    public func render(now: Timestamp = .now()) throws(MsgError) -> String {
        let stored = try store.destinationStates(nil)
        return exposition(try figures(now: now, stored: stored), stored: stored, now: now)
    }

    /// The figures at `now` (`msg web`'s overview shows them too); `stored`, the
    /// destination states, read when not given.
    func figures(now: Timestamp, stored given: [String: String]? = nil) throws(MsgError) -> Figures {
        let stored: [String: String]
        if let given { stored = given } else { stored = try store.destinationStates(nil) }
        let suspended = Set(stored.compactMap { (k, text) in DestinationState(text: text).suspension.map { $0.holds(at: now) } == true ? k : nil })
        if key == .recipient, let counts = try store.capabilities.journal?.counts(now: now, excluding: suspended) {
            return Self.figures(counts, suspended: suspended)
        }
        return try read(now: now, suspended: suspended)
    }

    /// The figures from a store's counts.
    static func figures(_ counts: StoreCounts, suspended: Set<String>) -> Figures {
        var f = Figures()
        var waiting: [String: Int] = [:]
        for (k, n) in counts.tally.figures {
            switch k.kind {
            case .messages:
                guard let status = Status(rawValue: k.b) else { continue }
                f.byStatus[status, default: 0] += n
                if status == .queued || status == .failed { waiting[k.a, default: 0] += n }
            case .attempts: f.attempts[k.a, default: [:]][k.b, default: 0] += n
            case .deliveries: f.deliveries[k.a, default: 0] += n
            case .failures: f.failures[k.a, default: 0] += n
            case .latency:
                if let i = Int(k.a), f.latency.indices.contains(i) { f.latency[i] += n }
            case .latencySum: f.latencySum = n
            }
        }
        for (recipient, n) in waiting {
            let due = max(0, n - (counts.notYetDue[recipient] ?? 0))
            if suspended.contains(recipient) { f.suspendedDue += due } else { f.due += due }
        }
        f.oldestDue = f.due > 0 ? counts.oldestDue : nil
        return f
    }

    /// The figures read from every record.
    private func read(now: Timestamp, suspended: Set<String>) throws(MsgError) -> Figures {
        var f = Figures()
        try store.list(Query()) { (r) throws(MsgError) -> Bool in
            let m = r.message
            f.byStatus[m.status, default: 0] += 1
            let destination = key.of(m)
            if m.status == .queued || m.status == .failed, (m.dueAt ?? m.createdAt) <= now {
                if suspended.contains(destination) {
                    f.suspendedDue += 1
                } else {
                    f.due += 1
                    if f.oldestDue.map({ m.createdAt < $0 }) ?? true { f.oldestDue = m.createdAt }
                }
            }
            // The attempts as a store that counts counts them, by destination key.
            Tally.forEachAttempt(in: m) { (e, firstSend) in
                f.attempts[e.status.rawValue, default: [:]][e.error?.code ?? "", default: 0] += 1
                switch e.status {
                case .sent, .delivered, .read: f.deliveries[destination, default: 0] += 1
                case .failed, .dead: f.failures[destination, default: 0] += 1
                default: break
                }
                if firstSend {
                    let ms = Tally.sendTime(e, of: m)
                    f.latency[Tally.latencyBucket(milliseconds: ms)] += 1
                    f.latencySum += ms
                }
            }
            return true
        }
        return f
    }

    private func exposition(_ f: Figures, stored: [String: String], now: Timestamp) -> String {
        let (byStatus, due, suspendedDue, oldestDue, attempts) = (f.byStatus, f.due, f.suspendedDue, f.oldestDue, f.attempts)
        let (latency, latencySum, deliveries, failures) = (f.latency, Double(f.latencySum) / 1000, f.deliveries, f.failures)
        var out = PrometheusText()
        out.family("msg_messages", .gauge, help: "Messages in the store by status.")
        for s in Status.allCases { out.sample("msg_messages", [("status", s.rawValue)], Double(byStatus[s] ?? 0)) }
        out.family("msg_queue_due_messages", .gauge, help: "Messages queued or failed whose time has come (not held, not to a suspended destination; one past its expiry until a flush marks it dead).")
        out.sample("msg_queue_due_messages", [], Double(due))
        out.family("msg_queue_suspended_due_messages", .gauge, help: "Messages whose time has come that wait for a destination suspended by hand.")
        out.sample("msg_queue_suspended_due_messages", [], Double(suspendedDue))
        out.family("msg_queue_lag_seconds", .gauge, help: "Age of the oldest message that is due and not sent, leaving out suspended destinations; 0 when none is.")
        out.sample("msg_queue_lag_seconds", [], oldestDue.map { Double(max(0, now.milliseconds - $0.milliseconds)) / 1000 } ?? 0)
        out.family("msg_attempts_total", .counter, help: "Attempts by outcome and error code.")
        for outcome in attempts.keys.sorted() {
            for (code, n) in attempts[outcome]!.sorted(by: { $0.key < $1.key }) {
                out.sample("msg_attempts_total", [("outcome", outcome), ("code", code)], Double(n))
            }
        }
        out.family("msg_enqueue_to_sent_seconds", .histogram, help: "Time from a message's creation to the attempt that first sent it.")
        out.histogram("msg_enqueue_to_sent_seconds", bounds: Self.latencyBounds, counts: latency, sum: latencySum)
        let busiest = Set(Set(deliveries.keys).union(failures.keys)
            .sorted { ((deliveries[$0] ?? 0) + (failures[$0] ?? 0), $1) > ((deliveries[$1] ?? 0) + (failures[$1] ?? 0), $0) }
            .prefix(top))
        for (name, counts, help) in [("msg_destination_deliveries_total", deliveries, "Deliveries per destination (the busiest only; the rest as (other))."),
                                     ("msg_destination_failures_total", failures, "Failed attempts per destination (the busiest only; the rest as (other)).")] {
            out.family(name, .counter, help: help)
            var other = 0
            for (d, n) in counts.sorted(by: { $0.key < $1.key }) {
                if busiest.contains(d) { out.sample(name, [("destination", d)], Double(n)) } else { other += n }
            }
            if other > 0 { out.sample(name, [("destination", "(other)")], Double(other)) }
        }
        states(stored, now: now, into: &out)
        return out.text
    }

    private func states(_ stored: [String: String], now: Timestamp, into out: inout PrometheusText) {
        var counts: [String: Int] = ["suspended": 0, "paused": 0, "open": 0, "half_open": 0]
        var named: [(String, String)] = []
        for (k, text) in stored.sorted(by: { $0.key < $1.key }) {
            let s = DestinationState(text: text)
            var found: [String] = []
            if let suspension = s.suspension, suspension.holds(at: now) { found.append("suspended") }
            if let until = s.pausedUntil, until > now { found.append("paused") }
            switch s.breaker(at: now) {
            case .closed: break
            case .open: found.append("open")
            case .halfOpen: found.append("half_open")
            }
            for state in found {
                counts[state, default: 0] += 1
                if named.count < top { named.append((k, state)) }
            }
        }
        out.family("msg_destinations", .gauge, help: "Destinations suspended by hand, paused at their request, or with an open or half-open breaker.")
        for (state, n) in counts.sorted(by: { $0.key < $1.key }) { out.sample("msg_destinations", [("state", state)], Double(n)) }
        out.family("msg_destination_state", .gauge, help: "1 for each destination in a state other than flowing (the first ones by name only).")
        for (d, state) in named { out.sample("msg_destination_state", [("destination", d), ("state", state)], 1) }
    }
}
