import CSQLite
import MsgKit

/// SQLite's "copy this value now" destructor, which Swift cannot import as a macro.
let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One prepared statement: binding, stepping and reading columns.
final class SQLiteStatement {
    private let stmt: OpaquePointer
    private unowned let database: SQLiteDatabase

    init(_ stmt: OpaquePointer, database: SQLiteDatabase) {
        self.stmt = stmt
        self.database = database
    }

    deinit { sqlite3_finalize(stmt) }

    /// Clears bindings and rewinds.
    func reset() {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
    }

    func bind(_ index: Int32, _ value: Int64?) {
        if let value { sqlite3_bind_int64(stmt, index, value) } else { sqlite3_bind_null(stmt, index) }
    }

    func bind(_ index: Int32, _ value: String?) {
        guard var value else { sqlite3_bind_null(stmt, index); return }
        value.withUTF8 { utf8 in
            _ = sqlite3_bind_text(stmt, index, UnsafeRawPointer(utf8.baseAddress!).assumingMemoryBound(to: CChar.self), Int32(utf8.count), transient)
        }
    }

    /// Binds text without copying it: `bytes` must stay alive until the statement
    /// has run (``RowEncoder/run(_:_:_:_:)`` steps inside the buffer's lifetime).
    func bindStatic(_ index: Int32, _ bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            _ = sqlite3_bind_text(stmt, index, "", 0, transient)
            return
        }
        _ = sqlite3_bind_text(stmt, index, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self), Int32(bytes.count), nil)
    }

    /// Binds bytes as a BLOB without copying them (as ``bindStatic(_:_:)``).
    func bindBlob(_ index: Int32, _ bytes: UnsafeBufferPointer<UInt8>) {
        _ = sqlite3_bind_blob(stmt, index, bytes.baseAddress, Int32(bytes.count), nil)
    }

    /// Steps once. - Returns: true when a row is ready. - Throws: the mapped error.
    func step(_ what: String = "reading") throws(MsgError) -> Bool {
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        let error = database.error(rc, what)
        sqlite3_reset(stmt)
        throw error
    }

    /// Runs a statement that returns no rows. - Throws: the mapped error.
    func run(_ what: String) throws(MsgError) {
        _ = try step(what)
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(stmt, column) }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(stmt, column) == SQLITE_NULL }
    /// How many columns a row of the statement has.
    var columnCount: Int32 { sqlite3_column_count(stmt) }

    /// The column's bytes, valid until the next step.
    func bytes(_ column: Int32) -> UnsafeBufferPointer<UInt8> {
        let count = Int(sqlite3_column_bytes(stmt, column))
        guard count > 0, let p = sqlite3_column_blob(stmt, column) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: p.assumingMemoryBound(to: UInt8.self), count: count)
    }
}
