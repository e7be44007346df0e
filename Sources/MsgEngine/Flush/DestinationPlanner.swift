import MsgKit

/// The flush's side of a claim (``ClaimPlanner``), decided inside the store's
/// atomic step: for each candidate, its own times (expiry), then its destination's
/// rules as ``DestinationBook`` orders them; what it takes is made `sending` under
/// a lease. Destination states are read per key, as candidates need them, and the
/// lessons of the run's outcomes are applied to them first.
package final class DestinationPlanner: ClaimPlanner {
    private let book: DestinationBook
    private let scan: ClaimScan
    private let now: Timestamp
    private let lease: Message.Lease
    private let lessons: [(key: String, lesson: DestinationBook.Lesson)]
    /// Ids this process has in flight (claimed and not yet recorded).
    private let own: Set<String>
    /// How many more messages of a key may be taken; nil: no bound.
    private let room: ((String) -> Int)?
    /// Whether a record was attempted in this run already (retry takes each once).
    private let attempted: (String) -> Bool
    private let faults: FaultPoints

    /// States read in this claim (or made), by key, and the keys whose state changed.
    private var states: [String: DestinationState] = [:]
    private var stored: [String: DestinationState] = [:]
    private var changed: Set<String> = []
    private var takenPerKey: [String: Int] = [:]
    /// Probes in flight with a live sender, by id, as found in this claim.
    private var liveProbes: [String: Bool] = [:]
    private var session: (any ClaimSession)?
    /// The session's destination locks, when processes claim on the store at once
    /// (``DestinationLocks``): keys this claim holds, keys another claim holds, and
    /// keys the store could not grant (the claim stops before them).
    private var locks: (any DestinationLocks)?
    private var reserved: Set<String> = []
    private var lockedElsewhere: Set<String> = []
    private var unreserved: Set<String> = []
    /// Whether any destination has a state (most queues: none); states are read only then.
    private var hasStates = true

    /// Lines for stderr (breakers opened and closed), damaged records met, probes taken.
    private(set) var notices: [String] = []
    /// The events of those notices (breaker opened or closed).
    private(set) var events: [DeliveryEvent] = []
    private(set) var damaged: [String] = []
    private(set) var probes: Set<String> = []
    /// The records as they were before this claim took them (to put back).
    private(set) var originals: [String: EncodedMessage] = [:]

    package init(book: DestinationBook, scan: ClaimScan, now: Timestamp, lease: Message.Lease, lessons: [(key: String, lesson: DestinationBook.Lesson)],
         own: Set<String>, room: ((String) -> Int)?, attempted: @escaping (String) -> Bool, faults: FaultPoints) {
        self.book = book
        self.scan = scan
        self.now = now
        self.lease = lease
        self.lessons = lessons
        self.own = own
        self.room = room
        self.attempted = attempted
        self.faults = faults
    }

    private var rules: DeliveryRules { book.rules }

    package func begin(_ session: any ClaimSession) throws(MsgError) {
        self.session = session
        // With every message its own destination there is no order to keep.
        locks = rules.key == .id ? nil : session.locks
        hasStates = !lessons.isEmpty
        if !hasStates { hasStates = try session.hasStates() }
        // Records in flight elsewhere hold their destinations (one at a time, in
        // every process); nil: nobody else changed the queue since the last claim.
        // Where claims run at once, they are read per destination once it is held
        // (a read of them all first was measured 9-11% slower on PostgreSQL).
        if locks != nil {
            scan.foreign = [:]
        } else if let inFlight = try session.inFlight() {
            scan.foreign = try destinations(of: inFlight)
        }
        // What the run's outcomes taught, into the stored states: their keys are
        // held first (waiting for a claim elsewhere that has one), then read.
        // (A claim of destinations says so here, with no keys if there are none.)
        if let locks {
            var keys: [String] = []
            var seen = Set<String>()
            for (key, _) in lessons where seen.insert(key).inserted { keys.append(key) }
            try reserve(keys, wait: true, locks)
        }
        try load(Set(lessons.map(\.key)))
        for (key, lesson) in lessons {
            var s = states[key] ?? DestinationState()
            if let notice = book.learn(lesson, into: &s, key: key, now: now) {
                notices.append(notice.line)
                events.append(notice.event)
            }
            states[key] = s
            changed.insert(key)
        }
    }

    /// Recipients the store may leave out: destinations held in this scan, and those
    /// in flight in another process (held whatever their state says), so a claim
    /// never reads the messages waiting behind them, not even its first chunk.
    package var skipping: Set<String> {
        guard rules.key == .recipient else { return [] }
        return scan.foreignKeys.isEmpty ? scan.skippable : scan.skippable.union(scan.foreignKeys)
    }

    package func consider(_ rows: [ClaimRow], in session: any ClaimSession) throws(MsgError) -> [ClaimAnswer] {
        if let locks {
            // The destinations of this chunk not decided yet, held before their states
            // and records in flight are read (those reads then see what the claims
            // that held them before committed).
            var keys: [String] = []
            var seen = Set<String>()
            for row in rows where !row.record.message.isDamaged {
                let key = rules.key.of(row.record.message)
                if reserved.contains(key) || lockedElsewhere.contains(key) || unreserved.contains(key)
                    || scan.held[key] != nil || scan.foreignKeys.contains(key) { continue }
                if seen.insert(key).inserted { keys.append(key) }
            }
            if !keys.isEmpty { try reserve(keys, wait: false, locks) }
        }
        if hasStates || rules.rate != nil {
            var keys = Set<String>()
            for row in rows {
                let key = rules.key.of(row.record.message)
                if locks == nil || reserved.contains(key) { keys.insert(key) }
            }
            try load(keys)
        }
        return try rows.map { (row) throws(MsgError) -> ClaimAnswer in try consider(row) }
    }

    private func consider(_ row: ClaimRow) throws(MsgError) -> ClaimAnswer {
        let r = row.record
        let m = r.message
        if m.isDamaged {
            // Never sent; the claim stores it as dead.
            damaged.append(m.id)
            return .skip
        }
        if attempted(m.id) { return .skip }
        if let expires = m.expiresAt, expires <= now {
            return .take(EncodedMessage(updating: r, to: try DestinationBook.expire(m, now: now)))
        }
        let key = rules.key.of(m)
        let at = ClaimPosition(createdAt: m.createdAt, id: m.id)
        if !scan.held.isEmpty, let held = scan.held[key] {
            scan.hold(key, held, from: at)
            return .skip
        }
        if locks != nil {
            // Another claim has it now: as if in flight there.
            if lockedElsewhere.contains(key) {
                scan.hold(key, .busy, from: at, locked: true)
                return .skip
            }
            // The store holds as many destinations as it can: the rest wait for the
            // next claim, in their order.
            if unreserved.contains(key) { return .stop }
            // Not held: it was in flight elsewhere when its chunk was read. What was
            // read of it since may say otherwise, but only a hold makes that true.
            if !reserved.contains(key) {
                scan.hold(key, .busy, from: at, locked: true)
                return .skip
            }
        }
        var taken = 0
        if let room {
            taken = takenPerKey[key] ?? 0
            if taken >= room(key) {
                // Its share of the pending messages is taken: the rest of it waits for
                // the scan to start again, so none goes ahead of these.
                scan.hold(key, .busy, from: at, counting: false, own: true)
                return .skip
            }
        }
        let busy = !scan.foreignKeys.isEmpty && scan.foreignKeys.contains(key)
        var s = hasStates ? states[key] ?? DestinationState() : DestinationState()
        switch book.verdict(s, busy: busy, probeInFlight: try probeInFlight(s), now: now) {
        case .hold(let hold):
            if case .throttled = hold {
                book.waited(&s, now: now)
                states[key] = s
                changed.insert(key)
            }
            // Claims that hold destinations run beside each other (PostgreSQL): what
            // they read of the records in flight interleaves with other claims'
            // commits, so a destination busy there is read again from its first
            // message left, not only from a commit's floor.
            scan.hold(key, hold, from: at, locked: locks != nil && hold == .busy)
            return .skip
        case .send(let probe):
            if probe || rules.rate != nil || s.pausedUntil != nil || s.suspension != nil {
                hasStates = true
                book.take(&s, probe: probe, id: m.id, now: now)
                states[key] = s
                changed.insert(key)
            }
            if probe {
                probes.insert(m.id)
                // One probe at a time: the rest of this destination waits for it.
                scan.hold(key, .probing, from: at, counting: false, own: true)
            }
            if room != nil { takenPerKey[key] = taken + 1 }
            var x = m
            try x.transition(to: .sending, event: "attempt", at: now)
            if let reason = rules.reason { x.history[x.history.count - 1].extra.append(.init("reason", .string(reason))) }
            x.lease = lease
            faults.pass(.beforeSending)
            originals[m.id] = r
            return .take(EncodedMessage(updating: r, to: x))
        }
    }

    /// Destinations of records in flight in other processes, by id: the recipient,
    /// or the key read from the record.
    private func destinations(of inFlight: [InFlight]) throws(MsgError) -> [String: String] {
        var busy: [String: String] = [:]
        for r in inFlight where !own.contains(r.id) {
            if rules.key == .recipient {
                busy[r.id] = r.to
            } else if let key = keysInFlight[r.id] {
                busy[r.id] = key
            } else {
                // Read once a claim: a claim of destinations reads the records in flight
                // at each grant.
                let key = (try session?.record(r.id)).flatMap { $0 }.map { rules.key.of($0.message) } ?? r.to
                keysInFlight[r.id] = key
                busy[r.id] = key
            }
        }
        return busy
    }

    /// Keys of records in flight elsewhere read in this claim, by id (not by recipient).
    private var keysInFlight: [String: String] = [:]

    /// Holds `keys` in the store for this claim (``DestinationLocks``), then takes the
    /// records in flight to the keys granted as they stand now.
    private func reserve(_ keys: [String], wait: Bool, _ locks: any DestinationLocks) throws(MsgError) {
        let r = try locks.reserve(keys, wait: wait, keysAreRecipients: rules.key == .recipient)
        reserved.formUnion(r.granted)
        lockedElsewhere.formUnion(r.busy)
        for key in keys where !r.granted.contains(key) && !r.busy.contains(key) { unreserved.insert(key) }
        // Nothing granted, nothing read.
        if r.granted.isEmpty { return }
        let fresh = try destinations(of: r.inFlight)
        if rules.key == .recipient {
            var foreign = scan.foreign.filter { !r.granted.contains($0.value) }
            for (id, key) in fresh where r.granted.contains(key) { foreign[id] = key }
            scan.foreign = foreign
        } else {
            // Every record in flight, read now.
            scan.foreign = fresh
        }
    }

    /// Whether the probe a state names is in flight with a live sender: this
    /// process's own, or another's whose owner is alive (a killed prober's probe ends).
    private func probeInFlight(_ s: DestinationState) throws(MsgError) -> Bool {
        guard let id = s.probe, s.openUntil != nil else { return false }
        if own.contains(id) { return true }
        guard scan.foreign[id] != nil else { return false }
        if let known = liveProbes[id] { return known }
        var alive = false
        if let lease = try session?.record(id)?.message.lease { alive = Owner.isAlive(lease, now: now) }
        liveProbes[id] = alive
        return alive
    }

    /// Reads the states of `keys` not read yet in this claim.
    private func load(_ keys: Set<String>) throws(MsgError) {
        let missing = keys.filter { states[$0] == nil && stored[$0] == nil }
        guard !missing.isEmpty, let session else { return }
        let found = try session.states(Set(missing))
        for key in missing {
            let s = found[key].map { DestinationState(text: $0) } ?? DestinationState()
            stored[key] = s
            states[key] = s
        }
    }

    package func finish() -> [String: String?] {
        var out: [String: String?] = [:]
        for key in changed {
            var s = states[key] ?? DestinationState()
            s.dropFullBucket(now: now, rate: rules.rate)
            states[key] = s
            let before = stored[key]
            if s.isEmpty {
                if before.map({ !$0.isEmpty }) ?? false { out[key] = .some(nil) }
            } else if before != s {
                out[key] = .some(s.text)
            }
        }
        return out
    }

    /// The states after this claim, for the keys it read.
    var knownStates: [String: DestinationState] { states }
}
