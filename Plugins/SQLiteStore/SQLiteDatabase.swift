#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import CSQLite
import MsgKit
import MsgSupport

/// A small wrapper over one SQLite connection: open with pragmas, cached prepared
/// statements, `BEGIN IMMEDIATE` transactions, errors as ``MsgError``.
final class SQLiteDatabase {
    let path: String
    let access: StoreAccess
    /// A descriptor of the database file, open as long as the connection: it says
    /// which file this connection works on, so a file another process has set aside
    /// (and maybe replaced by a new store) is never mistaken for the one at `path`.
    private let file: Int32
    private var handle: OpaquePointer?
    private var statements: [String: SQLiteStatement] = [:]

    /// Opens the database at `path`, waiting up to `busyTimeout` ms for other
    /// processes' locks. For `.write` a missing file is created (mode 0600, as its
    /// -wal and -shm files then are); for `.read` it is an error.
    /// - Throws: `storeIO` when it cannot be opened or does not exist (`.read`);
    ///   `config` when the file is not a SQLite database or is another application's.
    /// `readOnly` opens the file so that nothing is ever written to it, not even a
    /// checkpoint when it closes: for a damaged file set aside (``Salvage``).
    /// `application` opens an application's own database (an inbox, ``SQLiteInbox``):
    /// it must exist and must not be a msg store, and whose it is does not matter.
    init(path: String, access: StoreAccess, busyTimeout: Int32 = 30_000, readOnly: Bool = false, application: Bool = false) throws(MsgError) {
        self.path = path
        self.access = access
        if application {
            file = try Self.openApplication(path)
        } else if access == .write {
            // SQLite creates files 0644; make the file first so it is the owner's only.
            file = try SystemCalls.open(path, O_RDONLY | O_CREAT, mode: 0o600, code: .storeIO)
        } else {
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                if errno == ENOENT { throw Self.missing(path) }
                throw SystemCalls.error(.storeIO, "cannot open store \(path)")
            }
            file = fd
        }
        do throws(MsgError) {
            switch try SQLiteHeader.read(file, path: path) {
            case .notSQLite where application:
                throw MsgError(.config, "\(path) is not a SQLite database, so it cannot hold an inbox; msg left it as it is")
            case .sqlite(_, _, SQLiteHeader.msgApplicationID) where application:
                throw MsgError(.config, "\(path) is a msg store, not an application's database: an inbox lives in the database the application writes")
            case _ where application:
                break
            case .notSQLite:
                throw MsgError(.config, "\(path) is not a SQLite database, so it is not a msg store; msg left it as it is (check --store or MSG_STORE)")
            case .sqlite(ours: false, _, let application) where application != 0:
                throw MsgError(.config, "\(path) is the SQLite database of another application (application id \(application)), not a msg store; msg left it as it is")
            case .empty where access == .read:
                throw Self.missing(path)
            default:
                break
            }
        } catch {
            close(file)
            throw error
        }
        var db: OpaquePointer?
        let (name, flags) = Self.openMode(path, readOnly: readOnly || (access == .read && !application && !Self.writable(path)))
        let rc = sqlite3_open_v2(name, &db, flags | SQLITE_OPEN_NOMUTEX, nil)
        handle = db
        guard rc == SQLITE_OK else {
            let error = SQLiteError(code: rc, message: db.map { String(cString: sqlite3_errmsg($0)) } ?? "",
                                    systemErrno: db.map { sqlite3_system_errno($0) } ?? 0)
            sqlite3_close_v2(db)
            handle = nil
            close(file)
            throw error.msgError(path: path, while: "opening it")
        }
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeout)
    }

    /// Whether this user may write the file at `path` and make its journals beside it.
    private static func writable(_ path: String) -> Bool {
        Glibc.access(path, W_OK) == 0 && Glibc.access(SystemCalls.directory(of: path), W_OK) == 0
    }

    /// The name and flags `sqlite3_open_v2` is given. A read-only connection to a
    /// WAL store whose journal is not there, in a directory this user cannot write,
    /// cannot make the shared-memory file it needs; as sqlite.org/wal.html ("Read-Only
    /// Databases") says, such a file is opened as immutable: with no journal, the
    /// file holds every commit, and its view is the last checkpoint's. Where the
    /// journal is there, the connection reads through it as any reader does.
    private static func openMode(_ path: String, readOnly: Bool) -> (String, Int32) {
        guard readOnly else { return (path, SQLITE_OPEN_READWRITE) }
        if SystemCalls.exists(path + "-wal") || Glibc.access(SystemCalls.directory(of: path), W_OK) == 0 {
            return (path, SQLITE_OPEN_READONLY)
        }
        return ("file:" + uriPath(path) + "?immutable=1", SQLITE_OPEN_READONLY | SQLITE_OPEN_URI)
    }

    /// `path` as the path of a `file:` URI: `%`, `?` and `#` escaped (sqlite.org/uri.html).
    private static func uriPath(_ path: String) -> String {
        var out = ""
        for c in path.unicodeScalars {
            switch c {
            case "%": out += "%25"
            case "?": out += "%3f"
            case "#": out += "%23"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// A descriptor of an application's database, which must be there.
    private static func openApplication(_ path: String) throws(MsgError) -> Int32 {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw MsgError(.config, "there is no database at \(path): an inbox lives in the application's own SQLite database, which msg does not create") }
            throw SystemCalls.error(.storeIO, "cannot open the database \(path)")
        }
        return fd
    }

    /// The error for a store that is not there (read access).
    static func missing(_ path: String) -> MsgError {
        DamagedFile.noStore(at: path, companions: ["-wal", "-shm"])
    }

    /// Whether the file at `path` is still the one this connection works on.
    func isStillAtPath() -> Bool {
        var mine = stat(), there = stat()
        guard fstat(file, &mine) == 0, stat(path, &there) == 0 else { return false }
        return mine.st_dev == there.st_dev && mine.st_ino == there.st_ino
    }

    /// What the header of this connection's file says now.
    func header() -> SQLiteHeader.Kind? {
        try? SQLiteHeader.read(file, path: path)
    }

    deinit {
        statements.removeAll()
        // A connection to a file that was set aside does not delete `path-wal` (by
        // then maybe a new store's journal) when it closes: SQLite checks that the
        // file has not moved before it checkpoints and deletes its journal.
        sqlite3_close_v2(handle)
        close(file)
    }

    /// The error for result `rc` while doing `what`.
    func error(_ rc: Int32, _ what: String) -> MsgError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? ""
        return SQLiteError(code: rc, message: message, systemErrno: handle.map { sqlite3_system_errno($0) } ?? 0).msgError(path: path, while: what)
    }

    /// Runs SQL that returns no rows. - Throws: the mapped error.
    func execute(_ sql: String, _ what: String) throws(MsgError) {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        if rc != SQLITE_OK { throw error(rc, what) }
    }

    /// A prepared statement for `sql`, made once and reused.
    /// - Throws: the mapped error when `sql` cannot be prepared.
    func statement(_ sql: String) throws(MsgError) -> SQLiteStatement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error(rc, "preparing a query") }
        let s = SQLiteStatement(stmt, database: self)
        statements[sql] = s
        return s
    }

    /// An integer from a one-row query such as `PRAGMA user_version`.
    func integer(_ sql: String) throws(MsgError) -> Int64 {
        let s = try statement(sql)
        defer { s.reset() }
        guard try s.step() else { return 0 }
        return s.int64(0)
    }

    /// A text from a one-row query such as `PRAGMA journal_mode`.
    func text(_ sql: String) throws(MsgError) -> String? {
        let s = try statement(sql)
        defer { s.reset() }
        guard try s.step() else { return nil }
        let bytes = s.bytes(0)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Rows changed by the last statement.
    var changes: Int32 { sqlite3_changes(handle) }
    /// The rowid of this connection's last insert.
    var lastInsertRowid: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Runs `body`'s reads in one read transaction (`BEGIN DEFERRED`): one snapshot,
    /// also for a store opened for reading.
    func snapshot<R>(_ what: String, _ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        try between("BEGIN DEFERRED", what, body)
    }

    /// Runs `body` in the transaction under way, or in a ``snapshot(_:_:)`` when none is.
    func consistent<R>(_ what: String, _ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        if sqlite3_get_autocommit(handle) == 0 { return try body() }
        return try snapshot(what, body)
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction: the write lock is taken up
    /// front, so two writers wait for each other instead of failing on upgrade.
    /// Commits when `body` returns, rolls back when it throws.
    func transaction<R>(_ what: String, _ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        guard access == .write else { throw MsgError(.storeIO, "store \(path) was opened for reading only (while \(what))") }
        return try between("BEGIN IMMEDIATE", what, body)
    }

    /// `begin`, `body`, then COMMIT; ROLLBACK when anything throws.
    private func between<R>(_ begin: String, _ what: String, _ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        try execute(begin, what)
        do throws(MsgError) {
            let result = try body()
            try execute("COMMIT", what)
            return result
        } catch {
            _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
            throw error
        }
    }
}
