/// What one change of a message means for everything a store keeps beside its
/// rows, decided in one place for every store (GRDB's `TransactionObserver` is the
/// model: it sees each row change and says what to write in the same transaction).
///
/// A store tells its recorder each row change it makes in a commit, with the row's
/// facts as it found them (``StoredFacts``): ``inserted(_:_:prep:)``,
/// ``updated(_:_:from:prep:)``, ``removed(_:)`` and ``wroteStates()``. Each answers
/// what the row itself gets of the ledger (``RowLedger``), and the recorder gathers
/// the rest; before the commit the store takes it (``take()``, a ``CommitEffects``)
/// and writes it with the rows. The store decides none of it: the ``Tally``'s
/// deltas, the counts by creation minute, the floor of the commit in FIFO order and
/// the ledger's leaves (which leaf a change takes: its history entries appended to
/// the same content, or its whole state anew) are the recorder's.
///
/// The hashing, most of the ledger's cost, is done before the store's write lock
/// (``LedgerPrep/batch(_:stored:)`` on all cores): the common leaf of each change,
/// which ``commonChange(_:_:expected:prep:)`` says when it applies.
public struct ChangeRecorder: Sendable {
    private var effects = CommitEffects()

    public init() {}

    /// Whether nothing was recorded since the last ``take()``.
    public var isEmpty: Bool { effects.isEmpty }

    /// What the row of `r` gets if it is stored anew (nothing is recorded: a store
    /// that finds the id stored already stores nothing).
    public func insertion(_ m: Message, prep: LedgerPrep) -> RowLedger {
        RowLedger(entries: m.history.count, contentPrint: prep.print, leaves: effects.leafCount..<(effects.leafCount + 1))
    }

    /// A record stored anew: its whole state is its leaf.
    /// - Returns: what its row gets, as ``insertion(_:prep:)`` said.
    /// - Throws: `unavailable` when libcrypto cannot be loaded.
    @discardableResult
    public mutating func inserted(_ r: EncodedMessage, _ m: Message, prep: LedgerPrep) throws(MsgError) -> RowLedger {
        effects.tally.added(m)
        effects.counted(m.status.rawValue, m.createdAt, 1)
        effects.wrote(m.createdAt)
        let leaves = effects.append(try prep.leaf(r, stored: true), count: 1)
        return RowLedger(entries: m.history.count, contentPrint: prep.print, leaves: leaves)
    }

    /// The change of most writes (a claim, an outcome): `r` replaces a row of status
    /// `expected` to the same recipient whose ledger holds all of `r`'s history but
    /// its last entry, of the same content. A store that finds the row so (checked
    /// in its write) records it with ``updated(_:_:from:prep:)`` and these facts,
    /// and gives the row ``CommonChange/row``; any other row it reads first.
    public func commonChange(_ r: EncodedMessage, _ m: Message, expected: Status, prep: LedgerPrep) -> CommonChange {
        let n = m.history.count
        // Without history there is no entry to append: no row has -2 entries.
        let facts = StoredFacts(id: m.id, status: expected.rawValue, recipient: m.to, createdAt: m.createdAt,
                                ledgerEntries: n > 0 ? n - 1 : -2, contentPrint: prep.print)
        let first = effects.leafCount
        return CommonChange(facts: facts, row: RowLedger(entries: n, contentPrint: prep.print, leaves: first..<(first + (n > 0 ? 1 : 0))))
    }

    /// A row of `old` replaced by `r`. Its leaves: the history entries its ledger
    /// lacks when the content is the one the ledger holds and the history only grew,
    /// else its whole state (an edit, a history gone back as a claim put back, a
    /// message stored before the ledger).
    /// - Throws: `unavailable` when libcrypto cannot be loaded.
    @discardableResult
    public mutating func updated(_ r: EncodedMessage, _ m: Message, from old: StoredFacts, prep: LedgerPrep) throws(MsgError) -> RowLedger {
        let n = m.history.count
        let leaves: Range<Int>
        if old.ledgerEntries >= 0, Self.samePrint(old.contentPrint, prep.print), n >= old.ledgerEntries {
            if n == old.ledgerEntries + 1 {
                leaves = effects.append(try prep.leaf(r, stored: false), count: 1)
            } else {
                leaves = effects.append(try LedgerLeaf.entries(of: r, from: old.ledgerEntries))
            }
        } else {
            leaves = effects.append([try LedgerLeaf.state(of: r)])
        }
        if let status = Status(rawValue: old.status) {
            effects.tally.changed(from: status, to: old.recipient, into: m)
        } else {
            effects.tally.removed(to: old.recipient, status: old.status)
            effects.tally.added(m)
        }
        if old.status != m.status.rawValue {
            effects.counted(old.status, old.createdAt, -1)
            effects.counted(m.status.rawValue, m.createdAt, 1)
        }
        effects.wrote(min(old.createdAt, m.createdAt))
        return RowLedger(entries: n, contentPrint: prep.print, leaves: leaves)
    }

    /// A row removed: its leaf says so.
    /// - Returns: where its leaf is in the commit's run.
    /// - Throws: `unavailable` when libcrypto cannot be loaded.
    public mutating func removed(_ old: StoredFacts) throws(MsgError) -> Range<Int> {
        effects.tally.removed(to: old.recipient, status: old.status)
        effects.counted(old.status, old.createdAt, -1)
        effects.wrote(old.createdAt)
        return effects.append([try LedgerLeaf.removed(old.id)])
    }

    /// Whether two content fingerprints are one: on their low 32 bits, which is
    /// what a store may keep (PostgreSQL's `content_fp` is an `integer`).
    static func samePrint(_ a: Int64, _ b: Int64) -> Bool {
        Int32(truncatingIfNeeded: a) == Int32(truncatingIfNeeded: b)
    }

    /// Destination states written: anything may have changed for a claim.
    public mutating func wroteStates() {
        effects.floor = .all
    }

    /// What the commit must write beside its rows; the recorder starts again empty,
    /// with room for as much as this commit held (a run's commits are alike: a
    /// batch of 4,000 records to 4,000 recipients grows its tally 12 times otherwise).
    public mutating func take() -> CommitEffects {
        let taken = effects
        effects = CommitEffects()
        effects.tally.reserveCapacity(taken.tally.count)
        effects.leaves.reserveCapacity(taken.leaves.count)
        return taken
    }

    /// Forgets what was recorded (a commit rolled back); an empty recorder keeps its room.
    public mutating func reset() {
        if !effects.isEmpty { effects = CommitEffects() }
    }
}

/// A stored row's facts before a change, as its store holds them.
public struct StoredFacts: Sendable, Equatable {
    public var id: String
    /// The status as stored (a damaged row's may be one msg does not know).
    public var status: String
    public var recipient: String
    public var createdAt: Timestamp
    /// How many of its history entries its ledger holds; -1 when it was stored
    /// before the ledger began.
    public var ledgerEntries: Int
    /// Its content's fingerprint when the ledger last wrote it
    /// (``LedgerLeaf/contentPrint(_:)``), or its low 32 bits where the store keeps those.
    public var contentPrint: Int64

    public init(id: String, status: String, recipient: String, createdAt: Timestamp, ledgerEntries: Int, contentPrint: Int64) {
        self.id = id
        self.status = status
        self.recipient = recipient
        self.createdAt = createdAt
        self.ledgerEntries = ledgerEntries
        self.contentPrint = contentPrint
    }
}

/// What a change writes into its row's own ledger columns, and which leaves of
/// the commit's run (``CommitEffects/leaves``, from 0) are its.
public struct RowLedger: Sendable, Equatable {
    /// How many history entries the ledger now holds of it.
    public var entries: Int
    /// Its content's fingerprint.
    public var contentPrint: Int64
    /// Its leaves in the commit's run, in order.
    public var leaves: Range<Int>

    public init(entries: Int, contentPrint: Int64, leaves: Range<Int>) {
        self.entries = entries
        self.contentPrint = contentPrint
        self.leaves = leaves
    }
}

/// The row a store expects for the common change (``ChangeRecorder/commonChange(_:_:expected:prep:)``).
public struct CommonChange: Sendable, Equatable {
    /// What the stored row must be for the change to be the common one.
    public var facts: StoredFacts
    /// What the row gets then.
    public var row: RowLedger
}

/// What one commit writes beside its rows (``ChangeRecorder/take()``).
public struct CommitEffects: Sendable {
    /// Where in FIFO order the commit changed the queue (``JournalStore/changeFloor(since:)``).
    public enum Floor: Sendable, Equatable {
        /// It wrote no record and no state.
        case none
        /// Its records were created at this time or later.
        case lowest(Timestamp)
        /// It wrote a destination state.
        case all
    }

    /// The deltas of the figures kept with every change.
    public var tally = Tally()
    /// Records by status and minute of creation (``JournalStore/created(after:)``).
    public var created: [CreatedMinute: Int] = [:]
    public var floor = Floor.none
    /// The commit's leaves, one after another as ``LedgerLeaf/write(to:)`` keeps
    /// them, numbered after the ledger's last in the order given.
    public var leaves: [UInt8] = []
    public var leafCount = 0

    public init() {}

    public var isEmpty: Bool { tally.isEmpty && created.isEmpty && floor == .none && leafCount == 0 }

    mutating func counted(_ status: String, _ createdAt: Timestamp, _ n: Int) {
        created[CreatedMinute(status: status, minute: CreatedMinute.minute(of: createdAt)), default: 0] += n
    }

    mutating func wrote(_ createdAt: Timestamp) {
        switch floor {
        case .all: return
        case .lowest(let t) where t <= createdAt: return
        default: floor = .lowest(createdAt)
        }
    }

    mutating func append(_ bytes: [UInt8], count: Int) -> Range<Int> {
        leaves.append(contentsOf: bytes)
        leafCount += count
        return (leafCount - count)..<leafCount
    }

    mutating func append(_ made: [LedgerLeaf]) -> Range<Int> {
        for leaf in made { leaf.write(to: &leaves) }
        leafCount += made.count
        return (leafCount - made.count)..<leafCount
    }
}

/// Records of a status created in one minute: the unit of the counts by creation
/// time, whose buckets' edges move with the clock.
public struct CreatedMinute: Sendable, Hashable {
    public var status: String
    /// Minutes since the epoch, rounded down (before it, too).
    public var minute: Int64

    public init(status: String, minute: Int64) {
        self.status = status
        self.minute = minute
    }

    /// The minute of `t`.
    public static func minute(of t: Timestamp) -> Int64 {
        let ms = t.milliseconds
        return ms >= 0 ? ms / 60_000 : -((-ms + 59_999) / 60_000)
    }
}
