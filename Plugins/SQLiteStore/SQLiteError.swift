import CSQLite
import MsgKit

/// An SQLite result code and its message, kept as the underlying error of a
/// ``MsgError`` (as GRDB's `DatabaseError` does); never shown as the whole message.
struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The extended result code.
    let code: Int32
    /// SQLite's own text.
    let message: String
    var description: String { "SQLite error \(code): \(message)" }

    /// The primary result code.
    var primary: Int32 { code & 0xFF }

    /// The msg error for this SQLite error while doing `what` on the store at `path`.
    func msgError(path: String, while what: String) -> MsgError {
        switch primary {
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            return MsgError(.corrupt, "store \(path) is damaged (\(String(cString: sqlite3_errstr(code)))) while \(what)", underlying: self)
        case SQLITE_FULL:
            return MsgError(.storeIO, "store \(path): the disk is full while \(what); nothing in this batch was stored", underlying: self)
        case SQLITE_READONLY:
            return MsgError(.storeIO, "store \(path) cannot be written: the file or its directory is read-only (while \(what))", underlying: self)
        case SQLITE_BUSY, SQLITE_LOCKED:
            return MsgError(.storeIO, "store \(path) stayed locked by another process while \(what)", underlying: self)
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_AUTH:
            return MsgError(.storeIO, "cannot open store \(path) (\(String(cString: sqlite3_errstr(code))))", underlying: self)
        default:
            return MsgError(.storeIO, "store \(path): \(String(cString: sqlite3_errstr(code))) while \(what)", underlying: self)
        }
    }
}
