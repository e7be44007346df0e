#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// The flush's side of a claim (``ClaimPlanner``), decided inside the store's
/// atomic step: for each candidate, its own times (expiry), then its destination's
/// rules as ``DestinationBook`` orders them; what it takes is made `sending` under
/// a lease. Destination states are read per key, as candidates need them, and the
/// lessons of the run's outcomes are applied to them first.
package final class DestinationPlanner: ClaimPlanner {
    /// What every attempt of the claim is made with.
    package struct Setup {
        /// A lease of what a claim at `now` takes.
        func lease(_ now: Timestamp) -> Message.Lease {
            Message.Lease(host: owner.host, pid: owner.pid, until: now.adding(leaseLength))
        }

        let book: DestinationBook
        let clock: () -> Timestamp
        /// How long what a claim takes is leased for, from the claim's time.
        let leaseLength: MsgDuration
        /// Who holds the lease: this host and process (``Owner``).
        let owner: (host: String, pid: Int32)
        let lessons: [(key: String, lesson: DestinationBook.Lesson)]
        /// Ids this process has in flight (claimed and not yet recorded).
        let own: Set<String>
        /// How many messages of a key may be in flight at once, and how many are
        /// (``RunNotes/perKey``); nil: no bound.
        let room: (most: Int, inFlight: [String: Int])?
        /// The records attempted in this run already (retry takes each once).
        let attempted: Set<String>
        let faults: FaultPoints

        package init(book: DestinationBook, clock: @escaping () -> Timestamp, leaseLength: MsgDuration,
                     lessons: [(key: String, lesson: DestinationBook.Lesson)], own: Set<String>,
                     room: (most: Int, inFlight: [String: Int])?, attempted: Set<String>, faults: FaultPoints,
                     owner: (host: String, pid: Int32) = (Owner.host, getpid())) {
            self.book = book
            self.owner = owner
            self.clock = clock
            self.leaseLength = leaseLength
            self.lessons = lessons
            self.own = own
            self.room = room
            self.attempted = attempted
            self.faults = faults
        }
    }

    /// What an attempt read and decided of destinations: states read (or made) by
    /// key and the keys whose state changed, what was taken per key, probes found
    /// live, keys of records in flight elsewhere.
    private struct Reading {
        var states: [String: DestinationState] = [:]
        var stored: [String: DestinationState] = [:]
        var changed: Set<String> = []
        var takenPerKey: [String: Int] = [:]
        /// Probes in flight with a live sender, by id, as found in this claim.
        var liveProbes: [String: Bool] = [:]
        /// Keys of records in flight elsewhere read in this claim, by id (not by recipient).
        var keysInFlight: [String: String] = [:]
        /// Whether any destination has a state (most queues: none); states are read only then.
        var hasStates = true
    }

    /// The session's destination locks, when processes claim on the store at once
    /// (``DestinationLocks``): keys this claim holds, keys another claim holds, and
    /// keys the store could not grant (the claim stops before them).
    private struct Grants {
        let locks: any DestinationLocks
        var reserved: Set<String> = []
        var lockedElsewhere: Set<String> = []
        var unreserved: Set<String> = []
    }

    /// What a claim found for the run: lines for stderr (breakers opened and
    /// closed) and their events, damaged records met, probes taken, and the records
    /// as they were before it took them (to put back).
    package struct Found {
        package var notices: [String] = []
        package var events: [DeliveryEvent] = []
        package var damaged: [String] = []
        package var probes: Set<String> = []
        package var originals: [String: EncodedMessage] = [:]
    }

    private let setup: Setup
    /// The scan as the claim found it; each attempt starts from it (``begin(_:)``).
    private let start: ClaimScan
    /// The scan as this attempt leaves it: the run's once the claim commits.
    package private(set) var scan: ClaimScan
    /// When this attempt began, and the lease of what it takes.
    private var now: Timestamp
    private var lease: Message.Lease
    private var session: (any ClaimSession)?
    private var reading = Reading()
    private var grants: Grants?
    package private(set) var found = Found()

    /// A planner for a claim from `scan`. Each attempt (``begin(_:)``, again when
    /// the claim is made again after the store was unreachable) starts afresh from
    /// it, at the clock's time then.
    package init(_ setup: Setup, scan: ClaimScan) {
        self.setup = setup
        start = scan
        self.scan = scan
        now = setup.clock()
        lease = setup.lease(now)
    }

    private var book: DestinationBook { setup.book }
    private var lessons: [(key: String, lesson: DestinationBook.Lesson)] { setup.lessons }
    private var own: Set<String> { setup.own }
    private var locks: (any DestinationLocks)? { grants?.locks }
    private var rules: DeliveryRules { book.rules }

    package func begin(_ session: any ClaimSession) throws(MsgError) {
        // Afresh: an attempt that failed left nothing behind.
        self.session = session
        scan = start
        reading = Reading()
        found = Found()
        now = setup.clock()
        lease = setup.lease(now)
        // With every message its own destination there is no order to keep.
        grants = rules.key == .id ? nil : session.locks.map { Grants(locks: $0) }
        reading.hasStates = !lessons.isEmpty
        if !reading.hasStates { reading.hasStates = try session.hasStates() }
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
            var s = reading.states[key] ?? DestinationState()
            if let notice = book.of(key).learn(lesson, into: &s, key: key, now: now) {
                found.notices.append(notice.line)
                found.events.append(notice.event)
            }
            reading.states[key] = s
            reading.changed.insert(key)
        }
    }

    /// Recipients the store may leave out: destinations held in this scan, and those
    /// in flight in another process (held whatever their state says), so a claim
    /// never reads the messages waiting behind them, not even its first chunk.
    package var skipping: Set<String> {
        guard rules.key == .recipient else { return [] }
        return scan.foreignKeys.isEmpty ? scan.holds.skippable : scan.holds.skippable.union(scan.foreignKeys)
    }

    package func consider(_ rows: [ClaimRow], in session: any ClaimSession) throws(MsgError) -> [ClaimAnswer] {
        if let g = grants {
            // The destinations of this chunk not decided yet, held before their states
            // and records in flight are read (those reads then see what the claims
            // that held them before committed).
            var keys: [String] = []
            var seen = Set<String>()
            for row in rows where !row.record.reading({ $0.isDamaged }) {
                let key = rules.key.of(row.record)
                if g.reserved.contains(key) || g.lockedElsewhere.contains(key) || g.unreserved.contains(key)
                    || scan.holds.held[key] != nil || scan.foreignKeys.contains(key) { continue }
                if seen.insert(key).inserted { keys.append(key) }
            }
            if !keys.isEmpty { try reserve(keys, wait: false, g.locks) }
        }
        if reading.hasStates || rules.hasRate {
            var keys = Set<String>()
            for row in rows {
                let key = rules.key.of(row.record)
                if grants?.reserved.contains(key) ?? true { keys.insert(key) }
            }
            try load(keys)
        }
        return try rows.map { (row) throws(MsgError) -> ClaimAnswer in try consider(row) }
    }

    private func consider(_ row: ClaimRow) throws(MsgError) -> ClaimAnswer {
        // The record's fields read where it is kept: a copy of the message is made
        // only of one taken (a retain and a release of each of its fields).
        let r = row.record
        let (id, damaged, expiresAt, createdAt) = r.reading { ($0.id, $0.isDamaged, $0.expiresAt, $0.createdAt) }
        if damaged {
            // Never sent; the claim stores it as dead.
            found.damaged.append(id)
            return .skip
        }
        if !setup.attempted.isEmpty && setup.attempted.contains(id) { return .skip }
        if let expires = expiresAt, expires <= now {
            return .take(EncodedMessage(updating: r, to: try DestinationBook.expire(r.message, now: now)))
        }
        let key = rules.key.of(r)
        let at = ClaimPosition(createdAt: createdAt, id: id)
        if !scan.holds.held.isEmpty, let held = scan.holds.held[key] {
            scan.hold(key, held.why, from: at)
            return .skip
        }
        if let g = grants {
            // Another claim has it now: as if in flight there.
            if g.lockedElsewhere.contains(key) {
                scan.hold(key, .busy, from: at, locked: true)
                return .skip
            }
            // The store holds as many destinations as it can: the rest wait for the
            // next claim, in their order.
            if g.unreserved.contains(key) { return .stop }
            // Not held: it was in flight elsewhere when its chunk was read. What was
            // read of it since may say otherwise, but only a hold makes that true.
            if !g.reserved.contains(key) {
                scan.hold(key, .busy, from: at, locked: true)
                return .skip
            }
        }
        var taken = 0
        if let room = setup.room {
            taken = reading.takenPerKey[key] ?? 0
            if taken >= room.most - (room.inFlight[key] ?? 0) {
                // Its share of the pending messages is taken: the rest of it waits for
                // the scan to start again, so none goes ahead of these.
                scan.hold(key, .busy, from: at, counting: false, own: true)
                return .skip
            }
        }
        let busy = !scan.foreignKeys.isEmpty && scan.foreignKeys.contains(key)
        var s = reading.hasStates ? reading.states[key] ?? DestinationState() : DestinationState()
        let book = self.book.of(key)
        switch book.verdict(s, busy: busy, probeInFlight: try probeInFlight(s), now: now) {
        case .hold(let hold):
            if case .throttled = hold {
                book.waited(&s, now: now)
                reading.states[key] = s
                reading.changed.insert(key)
            }
            // Claims that hold destinations run beside each other (PostgreSQL): what
            // they read of the records in flight interleaves with other claims'
            // commits, so a destination busy there is read again from its first
            // message left, not only from a commit's floor.
            scan.hold(key, hold, from: at, locked: locks != nil && hold == .busy)
            return .skip
        case .send(let probe):
            if probe || book.rules.rate != nil || s.pausedUntil != nil || s.suspension != nil {
                reading.hasStates = true
                book.take(&s, probe: probe, id: id, now: now)
                reading.states[key] = s
                reading.changed.insert(key)
            }
            if probe {
                found.probes.insert(id)
                // One probe at a time: the rest of this destination waits for it.
                scan.hold(key, .probing, from: at, counting: false, own: true)
            }
            if setup.room != nil { reading.takenPerKey[key] = taken + 1 }
            var x = r.message
            try x.transition(to: .sending, event: "attempt", at: now)
            if let reason = rules.reason { x.history[x.history.count - 1].extra.append(.init("reason", .string(reason))) }
            x.lease = lease
            setup.faults.pass(.beforeSending)
            found.originals[id] = r
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
            } else if let key = reading.keysInFlight[r.id] {
                busy[r.id] = key
            } else {
                // Read once a claim: a claim of destinations reads the records in flight
                // at each grant.
                let key = (try session?.record(r.id)).flatMap { $0 }.map { rules.key.of($0) } ?? r.to
                reading.keysInFlight[r.id] = key
                busy[r.id] = key
            }
        }
        return busy
    }

    /// Holds `keys` in the store for this claim (``DestinationLocks``), then takes the
    /// records in flight to the keys granted as they stand now.
    private func reserve(_ keys: [String], wait: Bool, _ locks: any DestinationLocks) throws(MsgError) {
        let r = try locks.reserve(keys, wait: wait, keysAreRecipients: rules.key == .recipient)
        grants?.reserved.formUnion(r.granted)
        grants?.lockedElsewhere.formUnion(r.busy)
        for key in keys where !r.granted.contains(key) && !r.busy.contains(key) { grants?.unreserved.insert(key) }
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
        if let known = reading.liveProbes[id] { return known }
        var alive = false
        if let lease = try session?.record(id)?.message.lease { alive = Owner.isAlive(lease, now: now) }
        reading.liveProbes[id] = alive
        return alive
    }

    /// Reads the states of `keys` not read yet in this claim.
    private func load(_ keys: Set<String>) throws(MsgError) {
        let missing = keys.filter { reading.states[$0] == nil && reading.stored[$0] == nil }
        guard !missing.isEmpty, let session else { return }
        let found = try session.states(Set(missing))
        for key in missing {
            let s = found[key].map { DestinationState(text: $0) } ?? DestinationState()
            reading.stored[key] = s
            reading.states[key] = s
        }
    }

    package func finish() -> [String: String?] {
        var out: [String: String?] = [:]
        for key in reading.changed {
            var s = reading.states[key] ?? DestinationState()
            s.dropFullBucket(now: now, rate: book.of(key).rules.rate)
            reading.states[key] = s
            let before = reading.stored[key]
            if s.isEmpty {
                if before.map({ !$0.isEmpty }) ?? false { out[key] = .some(nil) }
            } else if before != s {
                out[key] = .some(s.text)
            }
        }
        return out
    }

    /// The states after this claim, for the keys it read.
    var knownStates: [String: DestinationState] { reading.states }
}
