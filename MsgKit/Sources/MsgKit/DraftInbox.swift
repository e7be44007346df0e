/// A table of drafts in an application's own database, which the application fills
/// in its own transactions and msg takes into its queue (msg-inbox(1),
/// docs/DESIGN.md 5): the transactional outbox. A row committed is taken once; a row
/// rolled back was never there.
///
/// An inbox plugin registers a factory for its URL scheme (``PluginRegistrar/inbox(scheme:_:)``,
/// ABI 9.0); the host drains through this protocol alone.
///
/// ## Implementation requirements
/// 1. **Taken under a lock, removed in the same commit.** ``take(limit:_:)`` gives
///    the oldest rows to `body` while no other drainer can take them, and removes
///    them durably only after `body` returned; when `body` throws, or the process
///    dies, they stay for the next drain. The host stores each row's message under
///    the row's ``InboxRow/id`` (an id already stored is not stored twice), so a
///    row given twice after a crash is still one message.
/// 2. **An id for every row that every read of it gives**: made when it is inserted
///    (PostgreSQL's `enqueue()`) or from what the row holds (SQLite's `seq`,
///    `inserted_at` and `nonce`), never by the drain: a row taken again must carry
///    the same id.
/// 3. **The application's rights stay its own.** Installing creates only the inbox's
///    own objects and touches nothing else of the application's database.
public protocol DraftInbox: AnyObject {
    /// Creates the inbox where it is missing, and brings an older one up to date;
    /// does nothing to one that is there already.
    /// - Returns: what it did, in a few words, for the user.
    /// - Throws: `storeIO`, `config`, `unreachable`.
    func install() throws(MsgError) -> String
    /// Calls `body` with at most `limit` of the oldest rows (none when it is empty),
    /// then removes them in one durable commit (requirement 1).
    /// - Returns: the number of rows taken and removed.
    /// - Throws: `config` when there is no inbox (``install()`` makes one); `storeIO`,
    ///   `unreachable`; or what `body` throws, with nothing removed.
    func take(limit: Int, _ body: ([InboxRow]) throws(MsgError) -> Void) throws(MsgError) -> Int
    /// Whether another process may have committed rows since the last call: read
    /// every few milliseconds while `flush --watch` waits, so it must be cheap (no
    /// round trip where the database can tell otherwise). True when it cannot tell.
    /// - Throws: `storeIO`, `unreachable`.
    func changed() throws(MsgError) -> Bool
}

/// One row of an inbox: the draft as the application wrote it, and its message's id.
public struct InboxRow: Sendable, Equatable {
    /// The id its message takes, unless the draft carries one (its idempotency key):
    /// a lower-case UUID, the same each time the row is read (requirement 2).
    public var id: String
    /// The draft's text (a JSON object, as `msg compose` reads one).
    public var draft: [UInt8]
    /// When the row was inserted (its message's `created_at`); nil when the inbox
    /// does not know.
    public var insertedAt: Timestamp?

    public init(id: String, draft: [UInt8], insertedAt: Timestamp?) {
        self.id = id
        self.draft = draft
        self.insertedAt = insertedAt
    }
}

/// Which inbox a URL names, for ``PluginRegistry/InboxFactory``.
public enum InboxRole: Sendable {
    /// The inbox the user named (`msg inbox`, `flush --inbox`).
    case named
    /// The inbox kept in the store at this URL, which `flush` drains without being
    /// asked; a factory answers nil when its stores keep none.
    case storesOwn
}
