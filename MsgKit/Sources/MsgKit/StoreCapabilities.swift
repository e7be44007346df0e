/// What a store does beyond the ten calls of ``Store`` (ABI 8.0), declared once in
/// ``Store/capabilities``: each is the object that does it (the store itself, most
/// often), or nil when the store does not. The host reads the value when it opens
/// the store and asks nothing else of it: no cast finds a capability, and a store
/// that declares none is a whole store (the host does without: it reads records to
/// count them, polls to watch, walks the queue from the start, keeps no ledger).
///
/// A store returns a new value each time (a computed property): kept in the store,
/// it would hold the store in a cycle.
public struct StoreCapabilities {
    /// The commit journal, and from it the counts, where commits changed the
    /// queue, the claim scan's hints and the ledger (``JournalStore``).
    public var journal: (any JournalStore)?
    /// A cheap token that changes when another process commits (``ChangeWatching``).
    public var watching: (any ChangeWatching)?
    /// Listings as the stored JSON text, without decoding (``TextListing``).
    public var textListing: (any TextListing)?
    /// The next due time from an index (``DueIndex``).
    public var dueIndex: (any DueIndex)?
    /// Damaged files set aside beside the store (``DamagedFiles``).
    public var damagedFiles: (any DamagedFiles)?

    /// A store's capabilities; each left out is one it does not have.
    public init(journal: (any JournalStore)? = nil, watching: (any ChangeWatching)? = nil, textListing: (any TextListing)? = nil,
                dueIndex: (any DueIndex)? = nil, damagedFiles: (any DamagedFiles)? = nil) {
        self.journal = journal
        self.watching = watching
        self.textListing = textListing
        self.dueIndex = dueIndex
        self.damagedFiles = damagedFiles
    }

    /// The names of the capabilities present, for `msg plugins` and tests.
    public var names: [String] {
        var n: [String] = []
        if journal != nil { n.append("journal") }
        if watching != nil { n.append("watching") }
        if textListing != nil { n.append("text-listing") }
        if dueIndex != nil { n.append("due-index") }
        if damagedFiles != nil { n.append("damaged-files") }
        return n
    }
}

/// A store that says cheaply whether another process committed (``StoreCapabilities/watching``):
/// `flush --watch` looks every few milliseconds.
public protocol ChangeWatching: AnyObject {
    /// A number that changes when another process commits a change to the queue,
    /// read without touching the records. - Throws: `storeIO`, `corrupt`.
    func changeToken() throws(MsgError) -> UInt64
}

/// A store that lists records as the JSON text it keeps (``StoreCapabilities/textListing``).
public protocol TextListing: AnyObject {
    /// Calls `body` with the JSON text of each record matching `query` in FIFO order,
    /// exactly as ``Message/write(to:includeHistory:)`` would write it, until it
    /// returns false. Text goes as it is only when it has the shape msg writes; else
    /// it is decoded (a damaged record goes as
    /// ``EncodedMessage/damaged(id:to:createdAt:text:error:now:)``).
    /// - Throws: `storeIO`, `corrupt`, or what `body` throws.
    func listJSON(_ query: Query, includeHistory: Bool, _ body: (UnsafeBufferPointer<UInt8>) throws(MsgError) -> Bool) throws(MsgError)
}

/// A store that finds the next due time from an index (``StoreCapabilities/dueIndex``).
public protocol DueIndex: AnyObject {
    /// The earliest time after `now` at which a record with one of `statuses`
    /// becomes due (its `not_before` or `next_attempt_at`), or nil.
    /// - Throws: `storeIO`, `corrupt`.
    func nextDue(_ statuses: Set<Status>, after now: Timestamp) throws(MsgError) -> Timestamp?
}

/// A store that sets damaged files aside beside it (``StoreCapabilities/damagedFiles``).
public protocol DamagedFiles: AnyObject {
    /// The damaged files this store (or an earlier run) set aside that are still
    /// beside it, oldest first. While there are any, the queue started afresh
    /// without the messages they hold: the host says so on every command.
    func setAside() -> [String]
}

/// What the host asks of any store, each through its capability when the store
/// declares one and by the core calls when it does not.
extension Store {
    /// ``DamagedFiles/setAside()``, or none.
    public func setAside() -> [String] { capabilities.damagedFiles?.setAside() ?? [] }

    /// ``ChangeWatching/changeToken()``, or nil when the store cannot tell cheaply.
    /// - Throws: `storeIO`, `corrupt`.
    public func changeToken() throws(MsgError) -> UInt64? {
        guard let w = capabilities.watching else { return nil }
        return try w.changeToken()
    }

    /// ``DueIndex/nextDue(_:after:)``, or read from every such record.
    /// - Throws: `storeIO`, `corrupt`.
    public func nextDue(_ statuses: Set<Status>, after now: Timestamp) throws(MsgError) -> Timestamp? {
        if let index = capabilities.dueIndex { return try index.nextDue(statuses, after: now) }
        var earliest: Timestamp?
        try list(Query(statuses: statuses)) { (r) throws(MsgError) -> Bool in
            if let due = r.message.dueAt, due > now, earliest.map({ due < $0 }) ?? true { earliest = due }
            return true
        }
        return earliest
    }

    /// ``TextListing/listJSON(_:includeHistory:_:)``, or the text of what
    /// ``list(_:_:)`` gives. - Throws: `storeIO`, `corrupt`, or what `body` throws.
    public func listJSON(_ query: Query, includeHistory: Bool, _ body: (UnsafeBufferPointer<UInt8>) throws(MsgError) -> Bool) throws(MsgError) {
        if let text = capabilities.textListing { return try text.listJSON(query, includeHistory: includeHistory, body) }
        var scratch: [UInt8] = []
        try list(query) { (r) throws(MsgError) -> Bool in
            if includeHistory { return try r.json.withUnsafeBufferPointer { (b) throws(MsgError) in try body(b) } }
            scratch.removeAll(keepingCapacity: true)
            scratch.append(contentsOf: r.json[..<r.historyOffset])
            scratch.append(UInt8(ascii: "}"))
            return try scratch.withUnsafeBufferPointer { (b) throws(MsgError) in try body(b) }
        }
    }
}
