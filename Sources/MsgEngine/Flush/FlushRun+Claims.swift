import MsgKit

/// What a run decides around its claims, as events in and actions out: where the
/// scan starts again before a claim (``FlushRun/claimStarts(token:now:floors:)``,
/// with the store's answers about other processes' commits), what a claim gave
/// (``FlushRun/claimed(_:)``), and the store back after an outage
/// (``FlushRun/storeCameBack()``).
extension FlushRun {
    /// What the shell does before a claim reads the queue.
    package enum ScanStart: Equatable, Sendable {
        /// Claim from the scan as it is.
        case ready
        /// Ask the store how far back the commits since this mark wrote (nil: only
        /// its mark now) and tell the run (``FlushRun/floorAnswered(_:since:)``).
        case askFloor(since: Int64?)
    }

    /// A claim is about to read the queue; `token` is the store's change token now,
    /// `floors` whether the store says where commits changed the queue
    /// (``ChangeFloors``). The scan starts again where it must
    /// (``ClaimScan/restart(token:at:)``): from the first message when a time came;
    /// when only other processes committed, from where their commits changed the
    /// queue (the store is asked); and from the first message a destination whose
    /// hold the run's own outcome ended left behind (``ClaimScan/releaseFreed()``).
    package mutating func claimStarts(token: UInt64?, now: Timestamp, floors: Bool) -> ScanStart {
        let restart = scan.restart(token: token, at: now)
        scan.token = token
        switch restart {
        case .goOn:
            if !scan.releaseFreed() { scan.rewind() }
        case .fromFirst:
            scan.rewind()
        case .changedElsewhere:
            if scan.releaseFreed(), floors, let mark = scan.floorMark { return .askFloor(since: mark) }
            scan.rewind()
        }
        // The mark from which the next change elsewhere is asked about: read before
        // this claim reads the queue, so what commits after it is asked about then.
        return floors && scan.floorMark == nil ? .askFloor(since: nil) : .ready
    }

    /// The store's answer to ``ScanStart/askFloor(since:)``: the scan goes back to
    /// just before the lowest message the commits since `since` wrote (from the
    /// first when they may have changed anything, or a hold to release has no
    /// first message on record), and asks from the store's mark now next time.
    package mutating func floorAnswered(_ change: ChangeFloor, since: Int64?) -> ScanStart {
        if since != nil {
            switch change.floor {
            case .none: break
            case .from(let position): if !scan.rewind(before: position) { scan.rewind() }
            case .all: scan.rewind()
            }
        }
        scan.floorMark = change.mark
        return .ready
    }

    /// Whether a claim of `limit` can find nothing the last claim did not find (its
    /// scan read to the end since it last started again) and has no lessons to store.
    package func claimFindsNothing(_ limit: Int) -> Bool {
        scan.exhausted && notes.lessons.isEmpty && limit > 0
    }

    /// A claim committed: its scan is the run's, the lessons it stored are gone from
    /// the notes and the states it read are known; what it took is in flight.
    package mutating func claimed(_ round: Claimer.Round) {
        if let claimedScan = round.scan { scan = claimedScan }
        notes.lessons.removeFirst(min(round.lessonsStored, notes.lessons.count))
        for (key, s) in round.known { notes.known[key] = s }
        for c in round.taken { notes.took(c.record.message.id, key: c.key) }
        claimed(taken: round.taken.count, expired: round.expired.count)
    }

    /// A message the run's statuses take becomes due at `time` (one whose retry
    /// time this run's outcomes set may lie behind the scan): that time starts the
    /// scan again.
    package mutating func becomesDue(_ time: Timestamp) {
        scan.nextDue = min(scan.nextDue ?? time, time)
    }

    /// The store came back after an outage: a claim whose commit reached it while
    /// its answer was lost may have left messages `sending` under this process's
    /// lease that were never handed out; the shell puts back those not among the
    /// returned ids (the run's own in flight). They are queued again behind the
    /// scan, so it starts again to find them.
    package mutating func storeCameBack() -> Set<String> {
        scan.rewind()
        return notes.inFlight
    }
}
