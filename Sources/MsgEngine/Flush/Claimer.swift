#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// What a run takes from the store (docs/DESIGN.md 6): claims in FIFO order under
/// a lease through a ``DestinationPlanner``, storing the lessons of the run's
/// outcomes with them. What the run has in flight and knows of its destinations
/// (its ``RunNotes``) and where the claims are in the queue (its ``ClaimScan``)
/// are its state machine's (``FlushRun``): a claim is given them as values and
/// gives back what it found. What comes back is the ``OutcomeDesk``'s to record.
package final class Claimer {
    /// A claimed record, the record as it was before (to put back), whether it is a
    /// breaker's probe.
    package struct Claimed: Sendable {
        package let record: EncodedMessage
        package let original: EncodedMessage
        package let key: String
        package let probe: Bool

        package init(record: EncodedMessage, original: EncodedMessage, key: String, probe: Bool) {
            self.record = record
            self.original = original
            self.key = key
            self.probe = probe
        }
    }

    /// What one claim gave: what it took and found expired, what it says, the
    /// scan as the claim left it (nil: as it was), the destination states it read,
    /// and how many of the run's lessons it stored.
    package struct Round {
        var taken: [Claimed] = []
        var expired: [EncodedMessage] = []
        var notices: [String] = []
        var events: [DeliveryEvent] = []
        var damaged: [String] = []
        package var scan: ClaimScan?
        var known: [String: DestinationState] = [:]
        var lessonsStored = 0

        package init(taken: [Claimed] = [], expired: [EncodedMessage] = [], scan: ClaimScan? = nil,
                     known: [String: DestinationState] = [:], lessonsStored: Int = 0) {
            self.taken = taken
            self.expired = expired
            self.scan = scan
            self.known = known
            self.lessonsStored = lessonsStored
        }
    }

    let store: any Store
    let book: DestinationBook
    let options: Flusher.Options
    let faults: FaultPoints
    let clock: @Sendable () -> Timestamp

    /// How long what a claim takes is leased for: long enough for every attempt of
    /// two batches at the run's longest deadline, and at least a minute.
    private let leaseLength: MsgDuration
    /// Who holds the leases: this host and process (``Owner``).
    private let owner = (host: Owner.host, pid: getpid())

    /// Retry takes each message once per run.
    private var attempted: Set<String> = []
    private let remember: Bool

    /// The outage the store rides out (`flush --watch`: the store is an
    /// ``OutageRidingStore``, which makes a claim again with its planner afresh);
    /// the claim looks after what an outage's lost answers left.
    let outage: StoreOutage?

    init(store: any Store, options: Flusher.Options, faults: FaultPoints, clock: @escaping @Sendable () -> Timestamp, outage: StoreOutage? = nil) {
        self.store = store
        self.outage = outage
        outagesSeen = outage?.ended ?? 0
        self.book = DestinationBook(rules: options.rules)
        self.options = options
        leaseLength = MsgDuration(milliseconds: max(60_000, options.longestDeadline.milliseconds * Int64(options.batchSize) * 2))
        self.faults = faults
        self.clock = clock
        // Only when `failed` is taken (retry), or ids are given, could one run pick a
        // message up twice: only then is each remembered.
        remember = options.statuses.contains(.failed) || options.targets != nil
    }

    /// The most messages of one destination claimed and not recorded; nil with one worker.
    var maxPerKey: Int? { options.concurrency > 1 ? max(1, options.batchSize * 2 / options.concurrency) : nil }

    /// Takes up to `limit` due messages, recording them `sending` in one commit with
    /// the run's lessons (`notes`, which say too what is in flight); `scan` is where
    /// the claim starts, and the round gives where it stopped. What fails commits
    /// nothing, so the store may make it again (its planner starts afresh, from
    /// `scan` as it was).
    func claim(limit: Int, notes: RunNotes, scan: ClaimScan) throws(MsgError) -> Round {
        let now = clock()
        var query = Query(statuses: options.statuses, dueBy: options.ignoreDue ? nil : now)
        if let targets = options.targets { query.ids = Set(targets) }
        let planner = DestinationPlanner(DestinationPlanner.Setup(
            book: book, clock: clock, leaseLength: leaseLength, lessons: notes.lessons, own: notes.inFlight,
            room: maxPerKey.map { ($0, notes.perKey) }, attempted: attempted, faults: faults, owner: owner), scan: scan)
        let result = try store.claim(ClaimRequest(query: query, limit: limit, after: scan.position, chunk: max(64, min(limit, 1024))), planner)
        var next = planner.scan
        next.advance(to: result.position)
        if result.reachedEnd { next.readToEnd() }
        if result.reachedEnd || result.taken.isEmpty {
            next.nextDue = options.ignoreDue ? nil : try store.nextDue(options.statuses, after: now)
        }
        let found = planner.found
        var round = Round(scan: next, known: planner.knownStates, lessonsStored: notes.lessons.count)
        round.notices = found.notices
        round.events = found.events
        round.damaged = found.damaged
        for line in store.takeNotices() { round.notices.append(line) }
        for r in result.taken {
            let id = r.id
            if remember { attempted.insert(id) }
            if r.status == .dead {
                round.expired.append(r)
                continue
            }
            round.taken.append(Claimed(record: r, original: found.originals[id] ?? r, key: options.rules.key.of(r),
                                       probe: found.probes.contains(id)))
        }
        if !result.taken.isEmpty { faults.pass(.afterSending, count: result.taken.count) }
        return round
    }

    /// Whether an outage the store rode out ended since the last call (those
    /// before this run ended in an earlier one, which looked after them).
    func outageEnded() -> Bool {
        guard let outage, outage.ended != outagesSeen else { return false }
        outagesSeen = outage.ended
        return true
    }

    /// Outages ended that ``outageEnded()`` has told.
    private var outagesSeen: Int

    /// After an outage: a claim whose commit reached the store while its answer was
    /// lost left messages `sending` under this process's lease that this run never
    /// handed to a transport (not among `own`). No other process takes them while
    /// this one lives, so they go back to `queued` now (a `recovered` event), to be
    /// sent once.
    func putBackOrphans(own: Set<String>) throws(MsgError) {
        let pid = getpid()
        let now = clock()
        _ = try store.claim(Query(statuses: [.sending]), limit: .max) { (m) throws(MsgError) -> Message? in
            guard let lease = m.lease, lease.host == Owner.host, lease.pid == pid, !own.contains(m.id) else { return nil }
            var x = m
            x.lease = nil
            try x.transition(to: .queued, event: "recovered", at: now)
            return x
        }
    }

    /// Whether the run took `id` (for the ids it was given).
    func took(_ id: String) -> Bool { attempted.contains(id) }

    /// The destinations this scan holds until a time (a breaker's cool-down, a pause,
    /// a throttle) or a suspension, with how many messages wait for each: counted in
    /// the store per recipient (the scan skipped most of them unread), or, without
    /// ``Flusher/Options/countsHeld``, those the scan read. One busy in
    /// another process or probing is not told, so it costs no count.
    func holds(_ scan: ClaimScan) throws(MsgError) -> [(key: String, hold: DestinationBook.Hold, waiting: Int)] {
        var out: [(key: String, hold: DestinationBook.Hold, waiting: Int)] = []
        // Counted by the store with every change where it keeps them (``Tally``):
        // read once, not a walk of the queue per destination (ten destinations held
        // with a million waiting cost a flush --watch 3 s of every 5).
        var tally: Tally?
        var tallyRead = false
        for (key, held) in scan.holds.held.sorted(by: { $0.key < $1.key }) where held.why.putsBack || held.why.until != nil {
            let hold = held.why
            var n = held.count
            if options.rules.key == .recipient && options.countsHeld {
                if options.targets == nil && !tallyRead {
                    tallyRead = true
                    tally = try store.capabilities.journal?.counts(now: clock(), excluding: [])?.tally
                }
                if let counted = tally?.records(statuses: options.statuses, to: key) {
                    n = counted
                } else {
                    n = try store.count(Query(statuses: options.statuses, to: key, ids: options.targets.map(Set.init)))
                }
            }
            out.append((key, hold, n))
        }
        return out
    }
}
