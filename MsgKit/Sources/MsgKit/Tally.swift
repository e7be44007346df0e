/// What a store counts as its records change, kept in the same commit as each
/// change (docs/DESIGN.md 6), so that `msg metrics`, `/metrics`, `queue count` and
/// `msg destinations` read a few counters instead of every record.
///
/// Two kinds of figures, each a number under a ``Key``:
/// - **gauges**: ``Kind/messages``, records by status, and by recipient too for the
///   statuses that wait to be sent (queued and failed, ``isByRecipient(_:)``); they
///   go down as records change status or are removed. Records in flight are counted
///   by status alone (a claim and its outcome then move one recipient's figure, not
///   two, and the in-flight records are few: a store reads them by recipient from
///   its index), and finished ones too;
/// - **counters** that only ever go up, also when `queue purge` removes the records
///   they came from: ``Kind/attempts`` by outcome and error code,
///   ``Kind/deliveries`` and ``Kind/failures`` by recipient, and the time from a
///   message's creation to its first `sent` (``Kind/latency`` by bucket of
///   ``latencyBounds``, ``Kind/latencySum`` in milliseconds).
///
/// A store builds a `Tally` of the deltas of one commit with ``added(_:)``,
/// ``removed(to:status:)`` and ``changed(from:to:into:)``, and adds them to what it
/// keeps before the commit; ``attempts(in:)`` counts the attempts a record's history
/// keeps, for a store that counts what it already holds. An attempt is counted when
/// a record leaves `sending`, as the histories say it: the outcome is the event after
/// its last `sending` event.
public struct Tally: Sendable, Equatable {
    /// What a figure counts.
    public enum Kind: String, Sendable, CaseIterable {
        /// Records: `a` the recipient (queued and failed) or "" (the other statuses), `b` the status.
        case messages = "m"
        /// Attempts: `a` the outcome (the status the record went to), `b` the error code or "".
        case attempts = "a"
        /// Attempts that delivered: `a` the recipient.
        case deliveries = "d"
        /// Attempts that failed (failed or dead): `a` the recipient.
        case failures = "f"
        /// First `sent` of a message by time since its creation: `a` the index of the first bound in ``Tally/latencyBounds`` not below it (their count when it is above all).
        case latency = "l"
        /// The sum of the times of ``latency`` in milliseconds.
        case latencySum = "s"
    }

    /// One figure's name.
    public struct Key: Hashable, Sendable {
        public var kind: Kind
        public var a: String
        public var b: String
        public init(_ kind: Kind, _ a: String, _ b: String = "") {
            self.kind = kind
            self.a = a
            self.b = b
        }
    }

    /// The upper bounds, in seconds, of the ``Kind/latency`` buckets.
    public static let latencyBounds: [Double] = [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 60, 300, 1800, 3600, 21600, 86400]

    /// The figures (or deltas), zeros among them (a delta may cancel out).
    private var raw: [Key: Int] = [:]

    /// The figures (or deltas) that are not zero.
    public var figures: [Key: Int] { raw.filter { $0.value != 0 } }

    /// Calls `body` with each figure that is not zero.
    public func forEach<E: Error>(_ body: (Key, Int) throws(E) -> Void) throws(E) {
        for (key, n) in raw where n != 0 { try body(key, n) }
    }

    public static func == (a: Tally, b: Tally) -> Bool { a.figures == b.figures }

    public init() {}

    /// Whether there is nothing to add.
    public var isEmpty: Bool { !raw.values.contains { $0 != 0 } }

    /// The figure under `key` (0 when there is none).
    public subscript(_ key: Key) -> Int { raw[key] ?? 0 }

    /// Adds `n` to the figure under `key`.
    public mutating func add(_ n: Int, to key: Key) {
        raw[key, default: 0] += n
    }

    /// How many figures (zeros among them) it holds.
    var count: Int { raw.count }

    /// Makes room for `n` figures.
    mutating func reserveCapacity(_ n: Int) { raw.reserveCapacity(n) }

    /// Forgets every figure, keeping the room they took (a store reuses one `Tally`
    /// for each of its commits).
    public mutating func removeAll() {
        raw.removeAll(keepingCapacity: true)
    }

    /// Adds every figure of `other`.
    public mutating func add(_ other: Tally) {
        for (key, n) in other.raw where n != 0 { add(n, to: key) }
    }

    /// Whether records with `status` are counted by recipient: those waiting to be
    /// sent, queued and failed.
    public static func isByRecipient(_ status: Status) -> Bool { status == .queued || status == .failed }

    /// The figure that counts records to `to` with `status` (a status msg does not
    /// know, from a damaged row, is counted by its name alone).
    public static func records(to: String, status: String) -> Key {
        Key(.messages, Status(rawValue: status).map(isByRecipient) == true ? to : "", status)
    }

    /// The figure that counts records to `to` with `status`.
    static func records(to: String, status: Status) -> Key {
        Key(.messages, isByRecipient(status) ? to : "", status.rawValue)
    }

    /// A record stored anew.
    public mutating func added(_ m: Message) {
        add(1, to: Self.records(to: m.to, status: m.status))
    }

    /// A record removed (its recipient and status as they were stored).
    public mutating func removed(to: String, status: String) {
        add(-1, to: Self.records(to: to, status: status))
    }

    /// The records with one of `statuses` (any when nil) to `to` (any when nil), or
    /// nil when the figures do not tell (by recipient, only queued and failed are).
    public func records(statuses: Set<Status>?, to: String?) -> Int? {
        if to != nil, !(statuses.map { !$0.isEmpty && $0.allSatisfy(Self.isByRecipient) } ?? false) { return nil }
        var n = 0
        for (key, v) in raw where key.kind == .messages && v != 0 {
            if let to, key.a != to { continue }
            if let statuses, !(Status(rawValue: key.b).map(statuses.contains) ?? false) { continue }
            n += v
        }
        return n
    }

    /// A record that was `old` (to `oldTo`) stored as `m`: the move between statuses
    /// and, when it leaves `sending`, the attempt that ended.
    public mutating func changed(from old: Status, to oldTo: String, into m: Message) {
        let (from, to) = (Self.records(to: oldTo, status: old), Self.records(to: m.to, status: m.status))
        if from != to {
            raw[from, default: 0] -= 1
            raw[to, default: 0] += 1
        }
        ended(from: old, into: m)
    }

    /// The counters of a change from `old` to `m` alone (not the record's move: a
    /// store that moves it itself, knowing the stored recipient, adds that).
    public mutating func ended(from old: Status, into m: Message) {
        if old == .sending, m.status != .sending { attemptEnded(m) }
    }

    /// The counters of each attempt `m`'s history keeps (not the record itself: see
    /// ``added(_:)``), for a store that counts what it already holds.
    public mutating func attempts(in m: Message) {
        Self.forEachAttempt(in: m) { (e, firstSend) in attempt(e, of: m, first: firstSend) }
    }

    /// Calls `body` with the event that ended each attempt `m`'s history keeps (the
    /// first event after a run of `sending` ones), and whether it is the first send of
    /// the message (the one ``Kind/latency`` times), in order: the one reading of
    /// a history, for a store that counts and for a count read from the records.
    public static func forEachAttempt(in m: Message, _ body: (Message.Event, Bool) -> Void) {
        var previous: Status?
        var sentSeen = false
        for e in m.history {
            if previous == .sending, e.status != .sending { body(e, e.status == .sent && !sentSeen) }
            if e.status == .sent { sentSeen = true }
            previous = e.status
        }
    }

    /// Milliseconds from `m`'s creation to event `e` (0 when the clock went back).
    public static func sendTime(_ e: Message.Event, of m: Message) -> Int {
        Int(max(0, e.at.milliseconds - m.createdAt.milliseconds))
    }

    /// The ``Kind/latency`` bucket of a send `ms` milliseconds after creation: the
    /// index of the first of ``latencyBounds`` not below it, their count above all.
    public static func latencyBucket(milliseconds ms: Int) -> Int {
        let seconds = Double(ms) / 1000
        return latencyBounds.firstIndex { seconds <= $0 } ?? latencyBounds.count
    }

    /// The attempt that ended in `m`'s last change: the event after its last `sending` one.
    private mutating func attemptEnded(_ m: Message) {
        let history = m.history
        var last = history.count - 1
        while last >= 0, history[last].status != .sending { last -= 1 }
        guard last >= 0, last + 1 < history.count else { return }
        var first = true
        for i in 0..<last where history[i].status == .sent {
            first = false
            break
        }
        attempt(history[last + 1], of: m, first: first)
    }

    /// The names of the ``Kind/latency`` buckets, made once.
    private static let bucketNames = (0...latencyBounds.count).map { String($0) }

    private mutating func attempt(_ e: Message.Event, of m: Message, first: Bool) {
        add(1, to: Key(.attempts, e.status.rawValue, e.error?.code ?? ""))
        switch e.status {
        case .sent, .delivered, .read: add(1, to: Key(.deliveries, m.to))
        case .failed, .dead: add(1, to: Key(.failures, m.to))
        default: break
        }
        if e.status == .sent, first {
            let ms = Self.sendTime(e, of: m)
            add(1, to: Key(.latency, Self.bucketNames[Self.latencyBucket(milliseconds: ms)]))
            add(ms, to: Key(.latencySum, ""))
        }
    }
}

/// What a store that counts (``JournalStore/counts(now:excluding:)``) tells at one moment.
public struct StoreCounts: Sendable, Equatable {
    /// The figures kept with every change.
    public var tally: Tally
    /// Records queued or failed whose time has not come (`not_before` or
    /// `next_attempt_at` after now), by recipient.
    public var notYetDue: [String: Int]
    /// Records in flight (`sending`) by recipient.
    public var inFlight: [String: Int]
    /// The creation time of the oldest record queued or failed whose time has come,
    /// to a recipient not in the excluded ones; nil when there is none.
    public var oldestDue: Timestamp?

    public init(tally: Tally, notYetDue: [String: Int], inFlight: [String: Int], oldestDue: Timestamp?) {
        self.tally = tally
        self.notYetDue = notYetDue
        self.inFlight = inFlight
        self.oldestDue = oldestDue
    }
}
