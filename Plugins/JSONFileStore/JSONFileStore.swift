#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// The `json:PATH` store: one NDJSON file, each change appended as one line.
///
/// - A record line replaces any earlier line with the same id; `{"$deleted":ID}`
///   deletes. Reading the file from the start rebuilds the queue.
/// - Each change msg writes comes after its `$ledger` line: its leaves of the
///   store's ledger, as the recorder chose them (``JSONLedger``, ``CommitLines``).
/// - Each call is one `write` of all its lines and one `fsync` (group commit),
///   stored whole or not at all: a commit of several changes counts its lines on
///   its first (``CommitLines``), and a reader takes none of one cut short.
/// - A last line without its newline is kept when it is a whole record, a record
///   after its `$ledger` line, or the end of a whole commit (a file edited by hand,
///   or restored by a tool that strips the last newline): the next writer adds the
///   newline. One that is not, a `$ledger` line whose change is not after it, or a
///   commit whose lines are not all there (a crash mid-write, never acknowledged),
///   is cut off by the next writer, its bytes kept in `PATH.torn-<time>`. A
///   complete line that is JSON with an id but not a record (edited by hand) is a
///   damaged record, given as such (dead, its text kept); any other damaged
///   complete line is corruption: the file is set aside for inspection and the
///   call fails with `corrupt`; it is never emptied.
/// - When dead lines outnumber live records the file is compacted atomically
///   (temporary file, fsync, rename, fsync of the directory).
/// - Writers hold an exclusive `flock` on `PATH.lock`, readers a shared one. The
///   lock is on a separate file because compaction replaces the data file's inode.
/// - It holds the whole queue in memory and reads the file again after another
///   process wrote: it is for small queues. It keeps at most ``defaultMaxRecords``
///   records (`?max_records=N` changes that, up to ``maxRecordsLimit``) and refuses
///   to store more, saying to move to `sqlite:`; it still reads a larger file.
public final class JSONFileStore: Store, ChangeWatching, DamagedFiles {
    /// The most records a JSON store keeps unless told otherwise.
    public static let defaultMaxRecords = 100_000
    /// The most `max_records` may say.
    public static let maxRecordsLimit = 1_000_000

    let path: String
    private let maxRecords: Int
    private let access: StoreAccess
    let lockFD: Int32
    var dataFD: Int32 = -1
    var identity: (dev: UInt64, ino: UInt64) = (0, 0)
    var state = StoreState()
    /// Whether a ``ledgerRead(_:)`` holds the shared lock over one state.
    var inSnapshot = false
    /// Lines for the user (``takeNotices()``).
    private var notices: [String] = []

    /// Opens the store at `url`'s path (``StoreFile``): for `.write` creating it
    /// in a directory that must be there; for `.read` an existing store only.
    /// - Throws: `usage` for a host part; `config` without a path or with a missing
    ///   directory; `storeIO` when the file cannot be opened (or, for `.read`, does
    ///   not exist), `noPermission`.
    public init(url: PluginURL, access: StoreAccess = .write) throws(MsgError) {
        path = try StoreFile.path(url, example: "json:/var/lib/msg/queue.json")
        maxRecords = try URLParameters(url, "json:", names: ["max_records"]).int("max_records", in: 1...Self.maxRecordsLimit) ?? Self.defaultMaxRecords
        self.access = access
        // The store is rewritten whole now and then (a new file renamed over it),
        // which would turn a link into a file and leave its target behind: refused.
        var st = stat()
        if lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFLNK {
            throw MsgError(.config, "json store \(path) is a symbolic link; name the file it points to (msg rewrites the store in place, which would replace the link)")
        }
        if access == .write {
            if !SystemCalls.exists(path) { try StoreFile.requireDirectory(of: path) }
            // The store exists from now on, empty until the first write.
            close(try SystemCalls.open(path, O_WRONLY | O_CREAT | O_APPEND, mode: 0o600, code: .storeIO))
        } else if !SystemCalls.exists(path) {
            throw DamagedFile.noStore(at: path)
        }
        // Never through a link planted at the lock's name: flock needs no write access.
        lockFD = try Self.openLock(path + ".lock", reading: access == .read)
    }

    /// The lock file, made when missing. A reader that may not make it in the
    /// directory (a user who may only read the store) locks the store's own file
    /// instead: no writer waits for that, and a reader takes a torn tail for what it is.
    private static func openLock(_ lock: String, reading: Bool) throws(MsgError) -> Int32 {
        do throws(MsgError) {
            return try SystemCalls.open(lock, O_RDONLY | O_CREAT | O_NOFOLLOW, mode: 0o600, code: .storeIO)
        } catch {
            guard reading, let e = error.underlying as? Errno, e.rawValue == EACCES || e.rawValue == EROFS || e.rawValue == EPERM else { throw error }
            let fd = Glibc.open(lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            if fd >= 0 { return fd }
            return try SystemCalls.open(String(lock.dropLast(5)), O_RDONLY | O_NOFOLLOW, code: .storeIO)
        }
    }

    public func setAside() -> [String] { DamagedFile.setAside(besides: path) }

    deinit {
        if dataFD >= 0 { close(dataFD) }
        close(lockFD)
    }

    // MARK: Store

    public var capabilities: StoreCapabilities { StoreCapabilities(journal: self, watching: self, damagedFiles: self) }

    public func add(_ records: [EncodedMessage]) throws(MsgError) -> [AddResult] {
        if records.isEmpty { return [] }
        return try write { (tx) throws(MsgError) -> [AddResult] in
            var count = tx.baseCount
            return try records.map { (r) throws(MsgError) -> AddResult in
                if let existing = tx.get(r.id) { return AddResult(message: existing, inserted: false) }
                guard count < maxRecords else {
                    throw MsgError(.storeIO, "the json: store \(path) keeps at most \(maxRecords) records and holds \(tx.baseCount); nothing of this batch was stored. Move the queue to sqlite: (msg queue ls --history --store json:\(path) | msg queue add --store sqlite:PATH), or remove finished messages (msg queue purge)")
                }
                count += 1
                tx.set(r)
                return AddResult(message: r.message, inserted: true)
            }
        }
    }

    public func get(_ id: String) throws(MsgError) -> EncodedMessage? {
        try read()
        return state.records[id].map { EncodedMessage($0) }
    }

    public func list(_ query: Query, _ body: (EncodedMessage) throws(MsgError) -> Bool) throws(MsgError) {
        try read()
        var remaining = query.limit ?? Int.max
        for m in state.fifo() where remaining > 0 && query.matches(m) {
            remaining -= 1
            if try !body(EncodedMessage(m)) { return }
        }
    }

    public func count(_ query: Query) throws(MsgError) -> Int {
        try read()
        let n = state.records.values.reduce(0) { $0 + (query.matches($1) ? 1 : 0) }
        return min(n, query.limit ?? Int.max)
    }

    public func update(_ changes: [Change]) throws(MsgError) -> [Bool] {
        if changes.isEmpty { return [] }
        return try write { (tx) throws(MsgError) -> [Bool] in
            changes.map { change in
                guard tx.get(change.record.id)?.status == change.expected else { return false }
                tx.set(change.record)
                return true
            }
        }
    }

    public func remove(_ removals: [Removal]) throws(MsgError) -> [Bool] {
        if removals.isEmpty { return [] }
        return try write { (tx) throws(MsgError) -> [Bool] in
            removals.map { r in
                guard let m = tx.get(r.id), r.statuses?.contains(m.status) ?? true else { return false }
                tx.delete(r.id)
                return true
            }
        }
    }

    public func claimSession<R>(_ body: (any ClaimSession) throws(MsgError) -> R) throws(MsgError) -> R {
        try write { (tx) throws(MsgError) -> R in
            let session = JSONClaimSession(tx, state, fifo: { [unowned self] in self.state.fifoIDs() })
            let result = try body(session)
            tx = session.end()
            return result
        }
    }

    public func destinationStates(_ keys: Set<String>?) throws(MsgError) -> [String: String] {
        try read()
        guard let keys else { return state.destinations }
        return state.destinations.filter { keys.contains($0.key) }
    }

    /// The file's identity, size and change time: any write (this handle's too) changes it.
    public func changeToken() throws(MsgError) -> UInt64 {
        var st = stat()
        guard stat(path, &st) == 0 else { return 0 }
        var h = UInt64(st.st_ino) &* 0x9E37_79B9_7F4A_7C15
        h ^= UInt64(bitPattern: Int64(st.st_size)) &* 0xBF58_476D_1CE4_E5B9
        h ^= UInt64(bitPattern: Int64(st.st_ctim.tv_sec) &* 1_000_000_000 &+ Int64(st.st_ctim.tv_nsec))
        return h
    }

    public func takeNotices() -> [String] {
        defer { notices = [] }
        return notices
    }

    // MARK: Transactions

    /// Runs `body` under the exclusive lock on an up-to-date state, appends and syncs
    /// the lines it produced, and only then applies its changes in memory. The queue
    /// is never copied: a batch costs what it changes, not the size of the queue.
    private func write<R>(_ body: (inout Transaction) throws(MsgError) -> R) throws(MsgError) -> R {
        try writable()
        try lock(LOCK_EX)
        defer { flock(lockFD, LOCK_UN) }
        try refresh(writer: true)
        // In a closure so the transaction's reference to the records is gone before
        // they are changed in place below.
        let (ops, result) = try { () throws(MsgError) in
            var tx = Transaction(base: state.records)
            let result = try body(&tx)
            return (tx.ops, result)
        }()
        // A store that held messages before its ledger begins it at its first write,
        // even one that changes nothing (`msg recover` with nothing to recover).
        guard !ops.isEmpty || (!state.ledger.began && !state.records.isEmpty) else { return result }
        let recount = state.fold == nil ? state.recount(now: .now()) : nil
        let commit = try CommitLines(ops, ledger: state.ledger, stored: state.records.count, recount: recount)
        try append(commit.output.bytes)
        try state.applyWritten(commit.lines)
        state.lines += commit.lines.count
        // Each record is two lines live in a compacted file (its `$ledger` line and its own).
        let live = 2 * state.records.count + state.destinations.count + state.ledger.removed.count
        if state.lines > 64 && state.lines - live > state.records.count {
            try compact()
        }
        return result
    }

    /// Appends `bytes` and syncs them; on failure cuts off whatever part was written
    /// (it was never acknowledged).
    func append(_ bytes: [UInt8], sync: Bool = true) throws(MsgError) {
        do throws(MsgError) {
            try SystemCalls.writeAll(dataFD, bytes, code: .storeIO, what: path)
            if sync { try SystemCalls.fsync(dataFD, code: .storeIO, what: path) }
        } catch {
            _ = ftruncate(dataFD, off_t(state.offset))
            throw error
        }
        state.offset += bytes.count
    }

    func writable() throws(MsgError) {
        guard access == .write else { throw MsgError(.storeIO, "store \(path) was opened for reading only") }
    }

    func read() throws(MsgError) {
        // Within ``ledgerRead(_:)``: its lock is held and the state is the one read.
        if inSnapshot { return }
        try lock(LOCK_SH)
        defer { flock(lockFD, LOCK_UN) }
        try refresh(writer: false)
    }

    func lock(_ operation: Int32) throws(MsgError) {
        while flock(lockFD, operation) != 0 {
            if errno != EINTR { throw SystemCalls.error(.storeIO, "cannot lock \(path).lock") }
        }
    }

    /// Brings the in-memory state up to date with the file: from scratch when the file
    /// was replaced (compaction by another process), else the lines appended since.
    func refresh(writer: Bool) throws(MsgError) {
        var st = stat()
        if stat(path, &st) != 0 {
            guard errno == ENOENT else { throw SystemCalls.error(.storeIO, "cannot inspect \(path)") }
            if !writer { state = StoreState(); return }
        }
        let current = (UInt64(st.st_dev), UInt64(st.st_ino))
        if dataFD < 0 || current != identity {
            if dataFD >= 0 { close(dataFD) }
            dataFD = -1
            dataFD = try SystemCalls.open(path, writer ? (O_RDWR | O_CREAT | O_APPEND) : O_RDONLY, mode: 0o600, code: .storeIO)
            var fst = stat()
            fstat(dataFD, &fst)
            identity = (UInt64(fst.st_dev), UInt64(fst.st_ino))
            state = StoreState()
        } else if writer && fcntl(dataFD, F_GETFL) & O_ACCMODE == O_RDONLY {
            close(dataFD)
            dataFD = try SystemCalls.open(path, O_RDWR | O_APPEND, code: .storeIO)
        }
        let bytes = try readFrom(state.offset)
        guard !bytes.isEmpty else { return }
        let consumed: Int
        do throws(StoreState.Damage) {
            // In place: a copy of the state would copy every record on each refresh.
            consumed = try state.apply(bytes)
        } catch {
            // Part of the lines were applied: forget them all, the next call reads afresh.
            state = StoreState()
            identity = (0, 0)
            if writer { throw try moveAside(line: error.line, reason: error.reason) }
            throw MsgError(.corrupt, "\(path) is damaged at line \(error.line) (\(error.reason)); the next msg command that writes will set it aside")
        }
        if consumed < bytes.count {
            try settleLastLine(Array(bytes[consumed...]), writer: writer)
        }
    }

    /// A last line without its newline. A whole record is kept: a writer adds the
    /// newline, a reader applies it without moving past it. Anything else is a torn
    /// write (never acknowledged): a writer keeps its bytes in `PATH.torn-<time>` and
    /// cuts it off; a reader ignores it.
    private func settleLastLine(_ tail: [UInt8], writer: Bool) throws(MsgError) {
        let whole = tail.last != 0x0A && StoreState.wholeLines(tail) != nil
        if whole && !writer {
            // Applied without moving past it: read from the start next time, so that
            // its leaves are not taken twice.
            if state.applyUnterminated(tail) { identity = (0, 0) }
            return
        }
        guard writer else { return }
        if whole {
            try SystemCalls.writeAll(dataFD, [0x0A], code: .storeIO, what: path)
            try SystemCalls.fsync(dataFD, code: .storeIO, what: path)
            var lines = tail
            lines.append(0x0A)
            do throws(StoreState.Damage) { _ = try state.apply(lines) } catch { throw MsgError(.corrupt, "\(path): \(error.reason)") }
            return
        }
        let kept = DamagedFile.asideName(path, at: .now(), infix: ".torn-")
        let fd = try SystemCalls.createExclusive(kept, code: .storeIO)
        defer { close(fd) }
        try SystemCalls.writeAll(fd, tail, code: .storeIO, what: kept)
        try SystemCalls.fsync(fd, code: .storeIO, what: kept)
        try SystemCalls.fsyncDirectory(SystemCalls.directory(of: path), code: .storeIO)
        if ftruncate(dataFD, off_t(state.offset)) != 0 { throw SystemCalls.error(.storeIO, "cannot repair \(path)") }
        try SystemCalls.fsync(dataFD, code: .storeIO, what: path)
        let what = tail.contains(0x0A) ? "its last lines were" : "its last line was"
        notices.append("store json:\(path): \(what) a write cut short (\(tail.count) bytes, never acknowledged); kept in \(kept) and cut off")
    }

    private func readFrom(_ offset: Int) throws(MsgError) -> [UInt8] {
        if lseek(dataFD, off_t(offset), SEEK_SET) < 0 { throw SystemCalls.error(.storeIO, "cannot read \(path)") }
        return try SystemCalls.readToEnd(dataFD, code: .storeIO, what: path)
    }

    /// Sets a damaged file aside (as Postfix's `corrupt` queue) and says where. Under
    /// the exclusive lock, just after reading it: the file at `path` is the one found
    /// damaged, and no other msg process can move it meanwhile.
    private func moveAside(line: Int, reason: String) throws(MsgError) -> MsgError {
        let aside: String
        do throws(MsgError) {
            aside = try DamagedFile.moveAside(path, code: .corrupt)
        } catch {
            return MsgError(.corrupt, "\(path) is damaged at line \(line) (\(reason)) and cannot be set aside: \(error.message)")
        }
        close(dataFD)
        dataFD = -1
        state = StoreState()
        return MsgError(.corrupt, "\(path) is damaged at line \(line) (\(reason)); it was moved to \(aside) for inspection and nothing was changed; the next command starts a new, empty store")
    }
}
