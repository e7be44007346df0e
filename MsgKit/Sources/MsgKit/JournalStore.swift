/// A store that keeps the commit journal (``StoreCapabilities/journal``, ABI 10;
/// docs/DESIGN.md 6): one row per commit, written in that commit, of what
/// ``ChangeRecorder`` decided the commit means (``CommitEffects``: its
/// ``CommitEffects/journalBytes(into:)`` and its leaves). From these few reads MsgKit
/// serves the counts (``counts(now:excluding:)``, ``created(after:)``), where the
/// queue changed since a mark (``changeFloor(since:)``), the claim scan's hints
/// (``scanHint(_:)``) and the ledger (msg-ledger(1)): a new store gets all of them for
/// the cost of one table, and decides nothing of what its rows hold.
///
/// ## Implementation requirements
/// 1. **With the change.** A commit's row is written in the transaction that writes
///    the change: a change committed has its row, one rolled back has none. Every
///    commit that changes a record or a destination state appends one, whoever
///    commits (this handle or another process).
/// 2. **The fold.** ``journalFold(_:)`` gives the ``CommitFold`` of every row
///    committed: the snapshot the store keeps, plus the rows after its mark
///    (``CommitFold/add(journal:)``); nil when the store is not counted whole (the
///    host then reads the records). It calls `body` in one committed state with the
///    reads `body` makes (``createdCounts(after:before:)``). A store rewrites the
///    snapshot as it likes (the SQL stores every ``CommitFold/foldEvery`` rows).
/// 3. **Floors since a mark.** ``journalFloors(since:limit:)`` answers the store's
///    mark now and the floors (``CommitEffects/floor(ofJournal:)``) of the rows after
///    `mark`, or nil for more than `limit`, rows forgotten or no mark. Marks only
///    grow; an answer may name again rows an earlier one named (PostgreSQL's marks
///    are conservative while other transactions are open), never leave one out.
/// 4. **The ledger.** Leaves are numbered from 0 in the order of the commits that
///    wrote them, never changed or removed; each stored message carries the numbers
///    of its leaves in order (none for one stored before the ledger began), and each
///    removed one keeps its list. Within ``ledgerRead(_:)`` every call reads the same
///    committed state.
/// 5. **Kept values are not changes.** ``keep(_:_:)`` stores a value by name (the
///    last one kept wins) without a journal row and without changing a record; a
///    value may be lost.
public protocol JournalStore: AnyObject {
    /// Calls `body` with the counts folded up to the last row committed (nil when
    /// not whole), and every read `body` makes from the same committed state.
    func journalFold<R>(_ body: (CommitFold?) throws(MsgError) -> R) throws(MsgError) -> R
    /// The store's mark now and the floors of the rows after `mark`, in any order;
    /// nil floors: anything may have changed (requirement 3).
    func journalFloors(since mark: Int64?, limit: Int) throws(MsgError) -> (mark: Int64, floors: [CommitEffects.Floor?]?)
    /// The value last kept under `name`, or nil.
    func kept(_ name: String) throws(MsgError) -> [UInt8]?
    /// Keeps `value` under `name` (requirement 5).
    func keep(_ name: String, _ value: [UInt8]) throws(MsgError)

    /// Runs `body` with every read in it from one committed state.
    func ledgerRead<R>(_ body: () throws(MsgError) -> R) throws(MsgError) -> R
    /// How many leaves the log holds.
    func ledgerSize() throws(MsgError) -> Int
    /// The run of leaves that holds leaf `from`, then the runs after it: `body` gets
    /// the number of a run's first leaf and its bytes (its leaves one after another,
    /// as a commit wrote them); it returns false to stop.
    func ledgerRuns(from: Int, _ body: (Int, UnsafeRawBufferPointer) throws(MsgError) -> Bool) throws(MsgError)
    /// The run that holds leaf `index`; nil past the end. Has a default (the first
    /// run ``ledgerRuns(from:_:)`` gives, for an index below ``ledgerSize()``).
    func ledgerRun(holding index: Int) throws(MsgError) -> (first: Int, bytes: [UInt8])?
    /// Every stored message with the numbers of its leaves (nil: stored before the
    /// ledger), then every removed one as its id and leaves (no record); `body`
    /// returns false to stop.
    func ledgerMessages(_ body: (EncodedMessage?, String, [Int]?) throws(MsgError) -> Bool) throws(MsgError)

    /// What the journal does not hold, from the records: those queued or failed not
    /// yet due and those in flight, by recipient, and the oldest due one not to a
    /// recipient in `excluded`. Has a default for a ``Store`` (its records, read).
    func openCounts(now: Timestamp, excluding excluded: Set<String>) throws(MsgError) -> OpenCounts
    /// By status, the records created after `start` and before `end` (the rest of
    /// one minute). Has a default for a ``Store`` (its records, read).
    func createdCounts(after start: Timestamp, before end: Timestamp) throws(MsgError) -> [String: Int]
}

/// The records' figures the journal does not keep (``JournalStore/openCounts(now:excluding:)``).
public struct OpenCounts: Sendable, Equatable {
    /// Records queued or failed whose time has not come, by recipient.
    public var notYetDue: [String: Int]
    /// Records in flight (`sending`) by recipient.
    public var inFlight: [String: Int]
    /// The creation time of the oldest record queued or failed whose time has come,
    /// to a recipient not excluded.
    public var oldestDue: Timestamp?

    public init(notYetDue: [String: Int] = [:], inFlight: [String: Int] = [:], oldestDue: Timestamp? = nil) {
        self.notYetDue = notYetDue
        self.inFlight = inFlight
        self.oldestDue = oldestDue
    }

    /// Adds one record's part.
    public mutating func add(_ m: Message, now: Timestamp, excluding excluded: Set<String>) {
        switch m.status {
        case .queued, .failed:
            if let due = m.dueAt, due > now {
                notYetDue[m.to, default: 0] += 1
            } else if !excluded.contains(m.to), oldestDue.map({ m.createdAt < $0 }) ?? true {
                oldestDue = m.createdAt
            }
        case .sending: inFlight[m.to, default: 0] += 1
        default: break
        }
    }
}

/// What ``JournalStore/changeFloor(since:)`` answers.
public struct ChangeFloor: Sendable, Equatable {
    /// How far back the commits since the mark reach.
    public enum Floor: Sendable, Equatable {
        /// No commit since the mark wrote a record or a state.
        case none
        /// At or before the lowest position a commit since the mark wrote.
        case from(ClaimPosition)
        /// Anything may have changed: a destination state, or commits forgotten.
        case all
    }

    /// The store's mark now, to ask from next time.
    public var mark: Int64
    /// Since the mark asked about (``Floor/all`` when none was).
    public var floor: Floor

    public init(mark: Int64, floor: Floor) {
        self.mark = mark
        self.floor = floor
    }
}

extension JournalStore {
    /// How many rows after a mark ``changeFloor(since:)`` asks for; a mark further
    /// behind is told anything may have changed.
    public static var floorRows: Int { 4096 }

    /// The figures kept with every change (the fold's ``Tally``) and the records'
    /// (``openCounts(now:excluding:)``) from one committed state; nil when the
    /// store is not counted whole. - Throws: `storeIO`, `corrupt`.
    public func counts(now: Timestamp, excluding excluded: Set<String>) throws(MsgError) -> StoreCounts? {
        try journalFold { (fold) throws(MsgError) -> StoreCounts? in
            guard let fold else { return nil }
            let open = try openCounts(now: now, excluding: excluded)
            return StoreCounts(tally: fold.tally, notYetDue: open.notYetDue, inFlight: open.inFlight, oldestDue: open.oldestDue)
        }
    }

    /// Per status: the records created strictly after each of `times` (in their
    /// order), then all of them (`times.count + 1` figures); nil when not known (the
    /// store not counted whole, or a time older than the fold keeps).
    /// - Throws: `storeIO`, `corrupt`.
    public func created(after times: [Timestamp]) throws(MsgError) -> [String: [Int]]? {
        try journalFold { (fold) throws(MsgError) -> [String: [Int]]? in
            try fold?.created(after: times, now: .now()) { (t) throws(MsgError) -> [String: Int] in
                try createdCounts(after: t, before: Timestamp(milliseconds: (CreatedMinute.minute(of: t) + 1) * 60_000))
            }
        }
    }

    /// The store's mark now and, when `mark` is given, how far back in FIFO order
    /// the commits after it wrote: a claim scan kept from run to run goes back only
    /// that far. - Throws: `storeIO`, `corrupt`.
    public func changeFloor(since mark: Int64?) throws(MsgError) -> ChangeFloor {
        let (newest, floors) = try journalFloors(since: mark, limit: Self.floorRows)
        guard let floors else { return ChangeFloor(mark: newest, floor: .all) }
        return CommitFold.floor(since: mark, newest: newest, floors)
    }

    /// Where the last one-shot run of `kind` left its claim scan (the host's text),
    /// or nil. - Throws: `storeIO`, `corrupt`.
    public func scanHint(_ kind: String) throws(MsgError) -> String? {
        try kept("hint:" + kind).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Keeps `hint` for the next run of `kind`: no change of the queue.
    /// - Throws: `storeIO`, `corrupt`.
    public func saveScanHint(_ kind: String, _ hint: String) throws(MsgError) {
        try keep("hint:" + kind, Array(hint.utf8))
    }

    public func ledgerRun(holding index: Int) throws(MsgError) -> (first: Int, bytes: [UInt8])? {
        // Within the log, the first run given is the one that holds it.
        guard index >= 0, index < (try ledgerSize()) else { return nil }
        var found: (first: Int, bytes: [UInt8])?
        try ledgerRuns(from: index) { (first, bytes) throws(MsgError) -> Bool in
            if first <= index { found = (first, Array(bytes)) }
            return false
        }
        return found
    }
}

extension JournalStore where Self: Store {
    public func openCounts(now: Timestamp, excluding excluded: Set<String>) throws(MsgError) -> OpenCounts {
        var open = OpenCounts()
        try list(Query(statuses: [.queued, .failed, .sending])) { (r) throws(MsgError) -> Bool in
            open.add(r.message, now: now, excluding: excluded)
            return true
        }
        return open
    }

    public func createdCounts(after start: Timestamp, before end: Timestamp) throws(MsgError) -> [String: Int] {
        var out: [String: Int] = [:]
        try list(Query()) { (r) throws(MsgError) -> Bool in
            let m = r.message
            if m.createdAt > start && m.createdAt < end { out[m.status.rawValue, default: 0] += 1 }
            return true
        }
        return out
    }
}
