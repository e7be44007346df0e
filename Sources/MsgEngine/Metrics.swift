import MsgKit

/// What `msg metrics` tells Prometheus about a store (docs/DESIGN.md 6), read in
/// one pass over its records and its destination states:
///
/// - `msg_messages{status}`: messages by status (every status, zeros too);
/// - `msg_queue_due_messages` and `msg_queue_lag_seconds`: messages due now
///   (queued or failed, not before their time) and the age of the oldest of them,
///   leaving out destinations suspended on purpose (a planned `suspend --for 2h`
///   is no lag to alert on); `msg_queue_suspended_due_messages` counts those;
/// - `msg_attempts_total{outcome,code}`: attempts kept in the histories by how
///   they ended (sent, failed, dead, or queued again by recover) and error code;
/// - `msg_enqueue_to_sent_seconds`: a histogram from a message's creation to its
///   first `sent`;
/// - `msg_destination_deliveries_total` and `msg_destination_failures_total`
///   `{destination}` for the `top` busiest destinations only, the rest summed as
///   `destination="(other)"`, so the series stay bounded;
/// - `msg_destinations{state}`: destinations suspended, paused, with an open or
///   half-open breaker; `msg_destination_state{destination,state}` names them
///   (at most `top`).
///
/// Counts read from histories are counters of what the store still holds: `queue
/// purge` lowers them, which Prometheus reads as a counter reset.
public struct Metrics {
    public static let latencyBounds: [Double] = [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 60, 300, 1800, 3600, 21600, 86400]

    private let store: any Store
    private let key: DestinationKey
    private let top: Int

    public init(store: any Store, key: DestinationKey = .recipient, top: Int = 20) {
        self.store = store
        self.key = key
        self.top = max(1, top)
    }

    /// The exposition text at `now`. - Throws: store errors.
    public func render(now: Timestamp = .now()) throws(MsgError) -> String {
        var byStatus: [Status: Int] = [:]
        var due = 0
        var oldestDue: Timestamp?
        var attempts: [String: [String: Int]] = [:]
        var latency = [Int](repeating: 0, count: Self.latencyBounds.count + 1)
        var latencySum = 0.0
        var deliveries: [String: Int] = [:]
        var failures: [String: Int] = [:]
        var suspendedDue = 0
        let stored = try store.destinationStates(nil)
        let suspended = Set(stored.compactMap { (k, text) in DestinationState(text: text).suspension.map { $0.holds(at: now) } == true ? k : nil })
        try store.list(Query()) { (r) throws(MsgError) -> Bool in
            let m = r.message
            byStatus[m.status, default: 0] += 1
            let destination = key.of(m)
            if m.status == .queued || m.status == .failed, (m.dueAt ?? m.createdAt) <= now, !(m.expiresAt.map { $0 <= now } ?? false) {
                if suspended.contains(destination) {
                    suspendedDue += 1
                } else {
                    due += 1
                    if oldestDue.map({ m.createdAt < $0 }) ?? true { oldestDue = m.createdAt }
                }
            }
            var previous: Status?
            var sentSeen = false
            for e in m.history {
                if previous == .sending, e.status != .sending {
                    let outcome = e.status.rawValue
                    attempts[outcome, default: [:]][e.error?.code ?? "", default: 0] += 1
                    switch e.status {
                    case .sent, .delivered, .read: deliveries[destination, default: 0] += 1
                    case .failed, .dead: failures[destination, default: 0] += 1
                    default: break
                    }
                }
                if e.status == .sent, !sentSeen {
                    sentSeen = true
                    let seconds = Double(max(0, e.at.milliseconds - m.createdAt.milliseconds)) / 1000
                    latency[Self.latencyBounds.firstIndex { seconds <= $0 } ?? Self.latencyBounds.count] += 1
                    latencySum += seconds
                }
                previous = e.status
            }
            return true
        }
        var out = PrometheusText()
        out.family("msg_messages", .gauge, help: "Messages in the store by status.")
        for s in Status.allCases { out.sample("msg_messages", [("status", s.rawValue)], Double(byStatus[s] ?? 0)) }
        out.family("msg_queue_due_messages", .gauge, help: "Messages queued or failed whose time has come (not held, not expired, not to a suspended destination).")
        out.sample("msg_queue_due_messages", [], Double(due))
        out.family("msg_queue_suspended_due_messages", .gauge, help: "Messages whose time has come that wait for a destination suspended by hand.")
        out.sample("msg_queue_suspended_due_messages", [], Double(suspendedDue))
        out.family("msg_queue_lag_seconds", .gauge, help: "Age of the oldest message that is due and not sent, leaving out suspended destinations; 0 when none is.")
        out.sample("msg_queue_lag_seconds", [], oldestDue.map { Double(max(0, now.milliseconds - $0.milliseconds)) / 1000 } ?? 0)
        out.family("msg_attempts_total", .counter, help: "Attempts in the stored histories by outcome and error code.")
        for outcome in attempts.keys.sorted() {
            for (code, n) in attempts[outcome]!.sorted(by: { $0.key < $1.key }) {
                out.sample("msg_attempts_total", [("outcome", outcome), ("code", code)], Double(n))
            }
        }
        out.family("msg_enqueue_to_sent_seconds", .histogram, help: "Time from a message's creation to its first sent, for the messages the store holds.")
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
