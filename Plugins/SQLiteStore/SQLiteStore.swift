#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import CSQLite
import MsgKit
import MsgSupport

/// The `sqlite:PATH` store: the default. WAL with `synchronous=FULL`, so a
/// committed batch survives power loss; `BEGIN IMMEDIATE` for every write, so
/// compare-and-set and claims are atomic across processes.
///
/// A damaged msg store is set aside (`PATH.corrupt-<time>`, with its -wal and -shm)
/// by a command that writes, and the call fails with `corrupt`: the queue is never
/// silently emptied. Only the file this connection found damaged is moved, decided
/// under a lock on the directory, so two processes that found one file damaged never
/// move the new store the first one left in its place. A file that is not a msg
/// store is never moved or changed.
public final class SQLiteStore: Store, ChangeWatching, TextListing, DueIndex {
    let db: SQLiteDatabase
    let path: String

    /// Opens the store at `url`'s path (``StoreFile``): for `.write` creating it
    /// when missing, in a directory that must be there; for `.read` an existing
    /// store only, which needs no write access to it or its directory.
    /// - Throws: `usage` for a host part; `config` without a path, with a missing
    ///   directory, or for a file that is not a msg store; `storeIO` (a missing store
    ///   for `.read`), `noPermission`, `corrupt`.
    public init(url: PluginURL, access: StoreAccess = .write) throws(MsgError) {
        path = try StoreFile.path(url, example: "sqlite:/var/lib/msg/queue.sqlite")
        // A misspelt option must not be dropped in silence: sqlite: takes none.
        if let (name, _) = url.parameters.first {
            throw MsgError(.config, "'\(url.text)': unknown parameter '\(name)'; the sqlite: store takes none")
        }
        if access == .write && !SystemCalls.exists(path) { try StoreFile.requireDirectory(of: path) }
        db = try SQLiteDatabase(path: path, access: access)
        try guarded { () throws(MsgError) in
            try db.execute("PRAGMA synchronous=FULL", "opening it")
            if access == .write {
                try SQLiteSchema.migrate(db)
                if try !SQLiteJournal.isWhole(db) {
                    try db.transaction("counting the messages afresh") { () throws(MsgError) in
                        if try !SQLiteJournal.isWhole(db) { try SQLiteJournal.recount(db) }
                    }
                }
            } else {
                try SQLiteSchema.check(db)
            }
            if access == .write && SystemCalls.exists(Self.reportName(path)) { try check() }
        }
    }

    // MARK: Store

    public var capabilities: StoreCapabilities {
        StoreCapabilities(journal: self, watching: self, textListing: self, dueIndex: self, damagedFiles: self)
    }

    public func add(_ records: [EncodedMessage]) throws(MsgError) -> [AddResult] {
        if records.isEmpty { return [] }
        // The ledger's leaves hashed before the write lock is taken.
        let preps = LedgerPrep.batch(records, stored: true)
        let stored = try guarded { () throws(MsgError) in
            try counted("storing \(records.count) messages") { () throws(MsgError) in
                let insert = try db.statement("""
                    INSERT INTO messages (id, status, recipient, created_at, updated_at, due_at, lease_until, open, record, history_at, content_len,
                                          ledger, history_n, content_fp)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?13, ?15, ?16, ?17) ON CONFLICT(id) DO NOTHING
                    """)
                var results: [AddResult] = []
                results.reserveCapacity(records.count)
                for (i, r) in records.enumerated() {
                    let prep = preps[i]
                    insert.reset()
                    let m = r.message
                    let split = SQLitePayloads.split(r.json, historyOffset: r.historyOffset)
                    // Its ledger, as the recorder says, recorded only if the row goes in.
                    try bindLedger(recorder.insertion(m, prep: prep), insert)
                    try RowEncoder.run(r, m, insert, "storing a message", split: split)
                    if db.changes == 1 {
                        try recorder.inserted(r, m, prep: prep)
                        if split > 0 { try writeContent(r, split, rid: db.lastInsertRowid) }
                        results.append(AddResult(message: m, inserted: true))
                    } else {
                        results.append(AddResult(message: try fetch(m.id)?.message ?? m, inserted: false))
                    }
                }
                return results
            }
        }
        // Committed, but into the queue only if no other process has set the file
        // aside meanwhile: the caller acknowledges these records to the user.
        guard db.isStillAtPath() else {
            throw MsgError(.storeIO, "store \(path) was set aside by another msg process while this batch of \(records.count) was stored: it went into the damaged file, not the queue; add it again")
        }
        return stored
    }

    public func get(_ id: String) throws(MsgError) -> EncodedMessage? {
        try guarded { () throws(MsgError) in try fetch(id) }
    }

    public func list(_ query: Query, _ body: (EncodedMessage) throws(MsgError) -> Bool) throws(MsgError) {
        try guarded { () throws(MsgError) in
            let (sql, binder) = SQLiteQuery.select(Row.columns, query)
            let s = try db.statement(sql)
            binder(s)
            defer { s.reset() }
            while try s.step("listing messages") {
                if try !body(Row(s).record()) { break }
            }
        }
    }

    public func listJSON(_ query: Query, includeHistory: Bool, _ body: (UnsafeBufferPointer<UInt8>) throws(MsgError) -> Bool) throws(MsgError) {
        try guarded { () throws(MsgError) in
            // The stored text goes out as it is when it has the shape msg writes;
            // anything else is decoded (and given as a damaged record's stand-in when it
            // does not read).
            let (sql, binder) = SQLiteQuery.select(Row.listingColumns, query)
            let s = try db.statement(sql)
            binder(s)
            defer { s.reset() }
            var scratch: [UInt8] = []
            while try s.step("listing messages") {
                let row = Row(s)
                if !row.looksWrittenByMsg || row.holdsRawBytes {
                    // The whole row, read in the same snapshot (a point query), decoded.
                    guard let r = try fetch(row.id) else { continue }
                    let text = includeHistory ? r.json : r.jsonWithoutHistory
                    if try !text.withUnsafeBufferPointer({ (b) throws(MsgError) in try body(b) }) { break }
                    continue
                }
                if includeHistory {
                    if try !body(row.text) { break }
                    continue
                }
                // Without history: the text before `,"history":`, then the closing brace.
                scratch.removeAll(keepingCapacity: true)
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: row.text[..<row.historyOffset]))
                scratch.append(UInt8(ascii: "}"))
                if try !scratch.withUnsafeBufferPointer({ (b) throws(MsgError) in try body(b) }) { break }
            }
        }
    }

    public func count(_ query: Query) throws(MsgError) -> Int {
        try guarded { () throws(MsgError) in
            let (sql, binder) = SQLiteQuery.count(query)
            let s = try db.statement(sql)
            binder(s)
            _ = try s.step("counting messages")
            let n = Int(s.int64(0))
            s.reset()
            return n
        }
    }

    public func update(_ changes: [Change]) throws(MsgError) -> [Bool] {
        if changes.isEmpty { return [] }
        let preps = LedgerPrep.batch(changes.map(\.record), stored: false)
        return try guarded { () throws(MsgError) in
            try counted("updating \(changes.count) messages") { () throws(MsgError) in
                try changes.indices.map { (i) throws(MsgError) -> Bool in try replace(changes[i].record, expected: changes[i].expected, prep: preps[i]) }
            }
        }
    }

    public func remove(_ removals: [Removal]) throws(MsgError) -> [Bool] {
        if removals.isEmpty { return [] }
        return try guarded { () throws(MsgError) in
            try counted("removing \(removals.count) messages") { () throws(MsgError) in
                let s = try db.statement("""
                    DELETE FROM messages WHERE id = ?1 AND (?2 IS NULL OR status IN (SELECT value FROM json_each(?2)))
                    RETURNING recipient, status, created_at, rid, content_len, ledger
                    """)
                let kept = try db.statement("INSERT INTO ledger_removed (id, ledger) VALUES (?1, ?2)")
                return try removals.map { (r) throws(MsgError) -> Bool in
                    s.reset()
                    s.bind(1, r.id)
                    s.bind(2, r.statuses.map { SQLiteQuery.jsonArray($0.map(\.rawValue).sorted()) })
                    defer { s.reset() }
                    guard try s.step("removing a message") else { return false }
                    let facts = StoredFacts(id: r.id, status: String(decoding: s.bytes(1), as: UTF8.self),
                                            recipient: String(decoding: s.bytes(0), as: UTF8.self),
                                            createdAt: Timestamp(milliseconds: s.int64(2)), ledgerEntries: -1, contentPrint: 0)
                    let rid = s.int64(3), apart = s.int64(4) > 0
                    // Its leaves kept, and the one of its removal.
                    let before = s.isNull(5) ? "" : String(decoding: s.bytes(5), as: UTF8.self) + " "
                    s.reset()
                    let leaves = try recorder.removed(facts)
                    kept.reset()
                    kept.bind(1, r.id)
                    kept.bind(2, before + (try leafNumbers(leaves)))
                    try kept.run("keeping a removed message's ledger")
                    if apart { try removeContent(rid) }
                    return true
                }
            }
        }
    }

    public func claimSession<R>(_ body: (any ClaimSession) throws(MsgError) -> R) throws(MsgError) -> R {
        let result = try guarded { () throws(MsgError) in
            try counted("claiming messages") { () throws(MsgError) -> R in
                try body(SQLiteClaimSession(self))
            }
        }
        noteOwnCommit()
        return result
    }

    public func destinationStates(_ keys: Set<String>?) throws(MsgError) -> [String: String] {
        try guarded { () throws(MsgError) in try readStates(keys) }
    }

    /// `PRAGMA data_version`: changes when another connection commits.
    public func changeToken() throws(MsgError) -> UInt64 {
        try guarded { () throws(MsgError) in UInt64(bitPattern: try db.integer("PRAGMA data_version")) }
    }

    public func nextDue(_ statuses: Set<Status>, after now: Timestamp) throws(MsgError) -> Timestamp? {
        try guarded { () throws(MsgError) in
            let s = try db.statement("""
                SELECT due_at FROM messages INDEXED BY messages_due WHERE due_at > ?1
                AND status IN (SELECT value FROM json_each(?2)) ORDER BY due_at LIMIT 1
                """)
            s.bind(1, now.milliseconds)
            s.bind(2, SQLiteQuery.jsonArray(statuses.map(\.rawValue).sorted()))
            defer { s.reset() }
            guard try s.step("reading the next due time") else { return nil }
            return Timestamp(milliseconds: s.int64(0))
        }
    }

    // MARK: Rows

    func fetch(_ id: String) throws(MsgError) -> EncodedMessage? {
        let s = try db.statement("SELECT \(Row.columns) FROM messages WHERE id = ?1")
        s.bind(1, id)
        guard try s.step("reading a message") else { return nil }
        defer { s.reset() }
        return Row(s).record()
    }

    /// The updates of ``replace(_:expected:prep:)``, by shape.
    var updateStatements: [SQLiteStatement?] = Array(repeating: nil, count: 17)

    /// Rowids of records this handle read in claims, by id, for ``replace(_:expected:prep:)``.
    var rowids: [RowKey: Int64] = [:]
    /// The contents kept apart (``SQLitePayloads``) of the records this handle put in
    /// flight, by rowid: their outcome writes none again.
    var contents: [Int64: [UInt8]] = [:]
    /// `PRAGMA data_version` as of this handle's last claim: unchanged means no other
    /// process committed since (the in-flight records are as this handle left them).
    var claimVersion: Int64?
    /// What the changes of the transaction under way mean beside their rows: the
    /// counts, the floor, the ledger's leaves (``counted(_:_:)`` writes it).
    var recorder = ChangeRecorder()
    /// The number of the ledger's next leaf when the transaction under way began,
    /// once read: its run's first (``leafNumbers(_:)``).
    var firstLeaf: Int?
    /// Journal bytes this handle appended since its last fold (``SQLiteJournal/append(_:first:_:appended:)``).
    var journalBytes = 0

    /// After a claim of this handle: its own commits do not change `data_version`.
    private func noteOwnCommit() {
        if rowids.count > 200_000 { rowids.removeAll() }
        // Only a saving: an outcome whose content is not kept here is compared in SQL.
        if contents.count > 8_192 { contents.removeAll() }
    }

    func readStates(_ keys: Set<String>?) throws(MsgError) -> [String: String] {
        var states: [String: String] = [:]
        let s: SQLiteStatement
        if let keys {
            if keys.isEmpty { return [:] }
            s = try db.statement("SELECT key, state FROM destinations WHERE key IN (SELECT value FROM json_each(?1))")
            s.bind(1, SQLiteQuery.jsonArray(keys.sorted()))
        } else {
            s = try db.statement("SELECT key, state FROM destinations")
        }
        defer { s.reset() }
        while try s.step("reading destination states") {
            states[String(decoding: s.bytes(0), as: UTF8.self)] = String(decoding: s.bytes(1), as: UTF8.self)
        }
        return states
    }

    func writeStates(_ states: [String: String?]) throws(MsgError) {
        if states.isEmpty { return }
        recorder.wroteStates()
        let upsert = try db.statement("INSERT INTO destinations (key, state) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET state = ?2")
        let delete = try db.statement("DELETE FROM destinations WHERE key = ?1")
        for (key, state) in states {
            let s = state == nil ? delete : upsert
            s.reset()
            s.bind(1, key)
            if let state { s.bind(2, state) }
            try s.run("storing a destination state")
        }
    }

    /// Decodes rows on all cores (in order); text that does not read gives a damaged record.
    static func decodeAll(_ rows: [Row.Copy]) -> [EncodedMessage] {
        MsgKit.parallelMap(rows) { $0.record() }
    }
}
