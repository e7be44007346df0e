#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// `snapshot:PATH`: the whole queue in one file, rewritten on every change. A store
/// written against plugin ABI 10's ten requirements and one capability, the commit
/// journal (``JournalStore``, in SnapshotJournal.swift): from it msg makes the
/// counts, floors, hints and ledger. It declares no other, so msg polls to watch
/// and decodes to list (msg-plugins(7)).
///
/// How it keeps the contract (Store's rules, by number):
/// 1. Each call that writes builds the new file beside the old (`PATH.new`), syncs
///    it, renames it over PATH and syncs the directory: one atomic, durable commit.
/// 2, 3. Every call holds `PATH.lock` (flock: shared to read, exclusive to write)
///    and reads the file again when it changed, so compare-and-set and claims hold
///    across processes.
/// 4. Listings sort by `created_at`, then `id`.
/// 5, 6. Files are 0600; opened to read, it creates nothing; a file it cannot read
///    is refused as `corrupt`, never emptied.
/// 7. A line that is no longer a record is given as its damaged stand-in.
///
/// File format: one JSON object a line, each a record as msg writes it, after a
/// first line `{"states":{...},"whole":true,"ledger":{...},"removed":[...],"kept":{...}}`
/// with the destination states and what the journal keeps beside its commits, which
/// follow the records (SnapshotJournal.swift).
public final class SnapshotStore: Store {
    private let path: String
    private let lockFD: Int32
    /// What was read last, and the file's identity then (inode, size, change time).
    private var state = Snapshot()
    private var seen: (ino_t, off_t, Int, Int)?
    /// How many ``reading(_:)`` calls are running: the lock is taken by the outer one.
    private var depth = 0

    struct Snapshot {
        var records: [String: EncodedMessage] = [:]
        var states: [String: String] = [:]
        /// Counted whole: written by this store since its journal began.
        var whole = true
        var journal: [Commit] = []
        var ledger: [String: Ledger] = [:]
        var removed: [(id: String, list: [Int])] = []
        var kept: [String: [UInt8]] = [:]
        /// What the changes of the commit being written mean (SnapshotJournal.swift).
        var recorder = ChangeRecorder()

        /// Every record in FIFO order.
        var fifo: [EncodedMessage] { records.values.sorted { Query.fifo($0.message, $1.message) } }
    }

    /// - Throws: `config` without a path; `storeIO` for a missing store opened to read.
    public init(url: PluginURL, access: StoreAccess) throws(MsgError) {
        guard !url.path.isEmpty else { throw MsgError(.config, "the snapshot: store needs a file, e.g. snapshot:/var/lib/msg/queue.snap") }
        if let (name, _) = url.parameters.first { throw MsgError(.config, "'\(url.text)': unknown parameter '\(name)'; the snapshot: store takes none") }
        path = url.path
        if access == .read, !SystemCalls.exists(path) {
            throw MsgError(.storeIO, "store \(path) does not exist (nothing has been queued there yet)")
        }
        if access == .write { try SystemCalls.makeDirectories(SystemCalls.directory(of: path), code: .storeIO) }
        let flags = access == .write ? O_RDWR | O_CREAT : O_RDONLY
        lockFD = try SystemCalls.open(path + ".lock", flags | O_CLOEXEC | O_NOFOLLOW, mode: 0o600, code: .storeIO)
        readOnly = access == .read
    }

    private let readOnly: Bool

    deinit { close(lockFD) }

    // MARK: Store

    /// The journal; msg does without the others.
    public var capabilities: StoreCapabilities { StoreCapabilities(journal: self) }

    public func add(_ records: [EncodedMessage]) throws(MsgError) -> [AddResult] {
        try writing { (s) throws(MsgError) -> [AddResult] in
            var out: [AddResult] = []
            for r in records {
                if let there = s.records[r.message.id] {
                    out.append(AddResult(message: there.message, inserted: false))
                } else {
                    try s.insert(r)
                    out.append(AddResult(message: r.message, inserted: true))
                }
            }
            return out
        }
    }

    public func get(_ id: String) throws(MsgError) -> EncodedMessage? {
        try reading { $0.records[id] }
    }

    public func list(_ query: Query, _ body: (EncodedMessage) throws(MsgError) -> Bool) throws(MsgError) {
        var n = 0
        for r in try reading({ $0.fifo }) where query.matches(r.message) {
            if let limit = query.limit, n >= limit { break }
            n += 1
            if try !body(r) { break }
        }
    }

    public func count(_ query: Query) throws(MsgError) -> Int {
        let n = try reading { s in s.records.values.filter { query.matches($0.message) }.count }
        return query.limit.map { min($0, n) } ?? n
    }

    public func update(_ changes: [Change]) throws(MsgError) -> [Bool] {
        try writing { (s) throws(MsgError) -> [Bool] in try s.apply(changes) }
    }

    public func remove(_ removals: [Removal]) throws(MsgError) -> [Bool] {
        try writing { (s) throws(MsgError) -> [Bool] in
            var out: [Bool] = []
            for r in removals {
                guard let there = s.records[r.id], r.statuses?.contains(there.message.status) ?? true else {
                    out.append(false)
                    continue
                }
                try s.delete(r.id)
                out.append(true)
            }
            return out
        }
    }

    public func claimSession<R>(_ body: (any ClaimSession) throws(MsgError) -> R) throws(MsgError) -> R {
        try writing { (s) throws(MsgError) -> R in
            let session = SnapshotSession(s)
            let result = try body(session)
            s = session.state
            return result
        }
    }

    public func destinationStates(_ keys: Set<String>?) throws(MsgError) -> [String: String] {
        try reading { s in keys.map { k in s.states.filter { k.contains($0.key) } } ?? s.states }
    }

    // MARK: The file

    /// `body` over the state as committed, under a shared lock; one read within
    /// another sees the outer one's state.
    func reading<R>(_ body: (Snapshot) throws(MsgError) -> R) throws(MsgError) -> R {
        if depth > 0 { return try body(state) }
        try locked(LOCK_SH)
        defer { flock(lockFD, LOCK_UN) }
        try load()
        depth += 1
        defer { depth -= 1 }
        return try body(state)
    }

    /// `body` over the state under an exclusive lock; what it leaves is written as
    /// one commit when it returns, nothing when it throws.
    func writing<R>(_ body: (inout Snapshot) throws(MsgError) -> R) throws(MsgError) -> R {
        guard !readOnly else { throw MsgError(.storeIO, "store \(path) was opened to read; nothing was written") }
        try locked(LOCK_EX)
        defer { flock(lockFD, LOCK_UN) }
        try load()
        var next = state
        next.recorder.reset()
        let result = try body(&next)
        next.commit()
        try save(next)
        state = next
        return result
    }

    private func locked(_ how: Int32) throws(MsgError) {
        while flock(lockFD, how) != 0 {
            if errno != EINTR { throw SystemCalls.error(.storeIO, "cannot lock \(path).lock") }
        }
    }

    /// Reads the file again when it changed since the last read.
    private func load() throws(MsgError) {
        var st = stat()
        guard stat(path, &st) == 0 else {
            if errno == ENOENT { (state, seen) = (Snapshot(), nil); return }
            throw SystemCalls.error(.storeIO, "cannot inspect \(path)")
        }
        let id = (st.st_ino, st.st_size, st.st_ctim.tv_sec, st.st_ctim.tv_nsec)
        if let seen, seen == id { return }
        let bytes = try SystemCalls.readFile(path, code: .storeIO, what: "store \(path)")
        var next = Snapshot()
        var number = 0
        for line in bytes.split(separator: 0x0A) {
            number += 1
            let text = Array(line)
            if number == 1 {
                guard let header = try? JSONParser.parse(text), next.read(header: header) else {
                    throw MsgError(.corrupt, "\(path): line 1 is not the store's states; the file was left as it is")
                }
                continue
            }
            if text.starts(with: Array(#"{"$commit""#.utf8)) {
                guard let value = try? JSONParser.parse(text), let commit = Snapshot.Commit(value) else {
                    throw MsgError(.corrupt, "\(path): line \(number) is not a commit of the journal; the file was left as it is")
                }
                next.journal.append(commit)
                continue
            }
            let r: EncodedMessage
            do throws(MsgError) {
                r = try EncodedMessage(stored: text, historyOffset: nil)
            } catch {
                // A record changed by hand: its damaged stand-in, if it still says its id.
                guard let value = try? JSONParser.parse(text), let rid = value["id"]?.stringValue, UUIDText.isCanonical(rid) else {
                    throw MsgError(.corrupt, "\(path): line \(number) is not a record (\(error.message)); the file was left as it is")
                }
                let created = value["created_at"]?.stringValue.flatMap(Timestamp.init(rfc3339:)) ?? Timestamp(milliseconds: 0)
                r = .damaged(id: rid, to: value["to"]?.stringValue, createdAt: created, text: text, error: error, now: .now())
            }
            next.records[r.message.id] = r
        }
        (state, seen) = (next, id)
    }

    /// Writes `s` beside the store, syncs it and renames it over the store.
    private func save(_ s: Snapshot) throws(MsgError) {
        var w = JSONWriter()
        w.value(s.header)
        var out = w.bytes
        out.append(0x0A)
        for r in s.fifo {
            out += r.json
            out.append(0x0A)
        }
        for c in s.journal {
            var line = JSONWriter()
            line.value(c.line)
            out += line.bytes
            out.append(0x0A)
        }
        try SystemCalls.replaceAtomically(path, with: out, code: .storeIO)
    }
}

extension SnapshotStore.Snapshot {
    /// Each change applied when the stored status is still its `expected`.
    mutating func apply(_ changes: [Change]) throws(MsgError) -> [Bool] {
        var applied: [Bool] = []
        for c in changes {
            guard let there = records[c.record.message.id], there.message.status == c.expected else {
                applied.append(false)
                continue
            }
            try replace(c.record)
            applied.append(true)
        }
        return applied
    }
}

/// One claim: the whole store is held (``SnapshotStore/claimSession(_:)``), so the
/// session reads and changes a copy that is written when the claim ends.
final class SnapshotSession: ClaimSession {
    var state: SnapshotStore.Snapshot
    private lazy var fifo = state.fifo

    init(_ state: SnapshotStore.Snapshot) { self.state = state }

    func inFlight() throws(MsgError) -> [InFlight]? {
        fifo.filter { $0.message.status == .sending }.map { InFlight(id: $0.message.id, to: $0.message.to) }
    }

    func record(_ id: String) throws(MsgError) -> EncodedMessage? { state.records[id] }

    func hasStates() throws(MsgError) -> Bool { !state.states.isEmpty }

    func states(_ keys: Set<String>) throws(MsgError) -> [String: String] { state.states.filter { keys.contains($0.key) } }

    func candidates(_ query: Query, after position: ClaimPosition?, skipping: Set<String>, limit: Int) throws(MsgError) -> [ClaimRow] {
        var rows: [ClaimRow] = []
        for r in fifo where rows.count < limit {
            let m = r.message
            if let position, ClaimPosition(createdAt: m.createdAt, id: m.id) <= position { continue }
            if query.matches(m) { rows.append(ClaimRow(record: r, status: m.status)) }
        }
        return rows
    }

    func store(_ changes: [Change], states: [String: String?]) throws(MsgError) -> [Bool] {
        let applied = try state.apply(changes)
        for (key, value) in states {
            state.states[key] = value
            state.wroteState()
        }
        fifo = state.fifo
        return applied
    }
}

@_cdecl("msg_plugin_register")
public func msgPluginRegister(_ abi: UInt32, _ registrar: UnsafeMutableRawPointer) -> Int32 {
    PluginRegistrar.register(abiVersion: abi, registrar: registrar, plugin: "SnapshotStore", version: "1.0.0") { r in
        r.store(scheme: "snapshot") { url, access throws(MsgError) in try SnapshotStore(url: url, access: access) }
    }
}
