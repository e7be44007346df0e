import MsgKit

/// Claims: what a run takes from the store, and what it puts back.
extension Flusher {
    /// What one claim gave.
    struct Round {
        var taken: [KeyScheduler.Item] = []
        var expired: [EncodedMessage] = []
        var held: [String: DestinationPlanner.Hold] = [:]
        var heldCount: [String: Int] = [:]
        var wake: Timestamp?
        var notices: [String] = []
    }

    /// Takes up to `limit` due messages per destination, recording them `sending` in
    /// one commit with what the last outcomes taught about their destinations.
    func claim(limit: Int) throws(MsgError) -> Round {
        let now = clock()
        var query = Query(statuses: options.statuses, dueBy: options.ignoreDue ? nil : now)
        if let targets = options.targets { query.ids = Set(targets) }
        let leaseLength = MsgDuration(milliseconds: max(60_000, options.deadline.milliseconds * Int64(options.batchSize) * 2))
        let faults = self.faults
        // An attempt ends sent, delivered, failed or dead: only when `failed` is among the
        // statuses taken (retry) could one run pick a message up twice, so only then is
        // each message remembered.
        let remember = options.statuses.contains(.failed) || options.targets != nil
        var originals: [String: Message] = [:]
        var damaged: [String] = []
        let rules = options.rules
        let maxPerKey = self.maxPerKey
        let attempted = self.attempted
        // Read in place through self: a copy would be copied in full by the inserts below.
        let planner = DestinationPlanner(
            rules: rules, now: now, isOwn: { [unowned self] id in self.inFlight.contains(id) }, events: events,
            probeLease: now.adding(leaseLength),
            room: maxPerKey.map { most in { [unowned self] key in most - (self.pendingPerKey[key] ?? 0) } },
            skip: { m in
                // A damaged record is never sent; the store sets it aside as dead.
                if m.isDamaged {
                    damaged.append(m.id)
                    return true
                }
                return remember && attempted.contains(m.id)
            },
            prepare: { (m) throws(MsgError) -> Message in
                var x = m
                try x.transition(to: .sending, event: "attempt", at: now)
                x.lease = Owner.lease(now: now, duration: leaseLength)
                faults.pass(.beforeSending)
                originals[m.id] = m
                return x
            })
        let claimed = try store.claim(ClaimRequest(query: query, limit: limit, scanLimit: max(4 * options.batchSize, 4096)), planner)
        events = []
        mirror = planner.states
        self.damaged += damaged
        var round = Round(held: planner.held, heldCount: planner.heldCount, wake: planner.wake, notices: planner.notices)
        for r in claimed {
            if remember { self.attempted.insert(r.message.id) }
            if r.message.status == .dead {
                round.expired.append(r)
                continue
            }
            let key = rules.key.of(r.message)
            inFlight.insert(r.message.id)
            if maxPerKey != nil { pendingPerKey[key, default: 0] += 1 }
            round.taken.append(KeyScheduler.Item(claimed: Claimed(record: r, original: originals[r.message.id] ?? r.message), key: key))
        }
        probes.formUnion(planner.probes)
        if !claimed.isEmpty { faults.pass(.afterSending, count: claimed.count) }
        return round
    }

    /// Prints and counts the messages a claim found expired (stored dead by the claim).
    func recordExpired(_ records: [EncodedMessage], into summary: inout Summary) throws(MsgError) {
        guard !records.isEmpty else { return }
        writer.flushEveryLine = false
        for r in records {
            summary.dead += 1
            summary.lastFailure = r.message.lastError
            writeOut { () throws(MsgError) in try writer.writeRaw(r.jsonWithoutHistory) }
        }
        writeOut { () throws(MsgError) in try writer.finish() }
    }

    /// Puts claimed messages back exactly as they were before their claim.
    func putBack(_ items: [KeyScheduler.Item], into summary: inout Summary, counted: Bool) throws(MsgError) {
        guard !items.isEmpty else { return }
        let applied = try store.update(items.map { Change($0.claimed.original, expected: .sending) })
        for (item, ok) in zip(items, applied) {
            forget(item.claimed.record.message.id, key: item.key)
            if ok && counted { summary.released += 1 }
        }
    }

    func forget(_ id: String, key: String) {
        inFlight.remove(id)
        if maxPerKey != nil, let n = pendingPerKey[key] { pendingPerKey[key] = n > 1 ? n - 1 : nil }
    }
}
