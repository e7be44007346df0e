#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import CSQLite
import MsgKit

/// A small wrapper over one SQLite connection: open with pragmas, cached prepared
/// statements, `BEGIN IMMEDIATE` transactions, errors as ``MsgError``.
final class SQLiteDatabase {
    let path: String
    private var handle: OpaquePointer?
    private var statements: [String: SQLiteStatement] = [:]

    /// Opens (creating, mode 0600) the database at `path`, WAL with `synchronous=FULL`,
    /// waiting up to `busyTimeout` ms for other processes' locks.
    /// - Throws: `storeIO` when it cannot be opened, `corrupt` when it is not a database.
    init(path: String, busyTimeout: Int32 = 30_000) throws(MsgError) {
        self.path = path
        // SQLite creates files 0644; make the file first so it is the owner's only.
        // Its -wal and -shm files take the same mode.
        let fd = try SystemCalls.open(path, O_RDWR | O_CREAT, mode: 0o600, code: .storeIO)
        close(fd)
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        handle = db
        guard rc == SQLITE_OK else {
            let error = SQLiteError(code: rc, message: db.map { String(cString: sqlite3_errmsg($0)) } ?? "")
            sqlite3_close_v2(db)
            handle = nil
            throw error.msgError(path: path, while: "opening it")
        }
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeout)
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// The error for result `rc` while doing `what`.
    func error(_ rc: Int32, _ what: String) -> MsgError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? ""
        return SQLiteError(code: rc, message: message).msgError(path: path, while: what)
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

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction: the write lock is taken up
    /// front, so two writers wait for each other instead of failing on upgrade.
    /// Commits when `body` returns, rolls back when it throws.
    func transaction<R>(_ what: String, _ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        try execute("BEGIN IMMEDIATE", what)
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
