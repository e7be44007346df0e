#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import CSQLite
import MsgKit
import MsgSupport

/// An SQLite result code and its message, kept as the underlying error of a
/// ``MsgError`` (as GRDB's `DatabaseError` does); never shown as the whole message.
struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The extended result code.
    let code: Int32
    /// SQLite's own text.
    let message: String
    /// The errno of the system call that failed under it (`sqlite3_system_errno`), or 0.
    var systemErrno: Int32 = 0
    var description: String { "SQLite error \(code): \(message)" + (systemErrno == 0 ? "" : " (errno \(systemErrno))") }

    /// The primary result code.
    var primary: Int32 { code & 0xFF }

    /// The msg error for this SQLite error while doing `what` on the store at `path`.
    func msgError(path: String, while what: String) -> MsgError {
        // A full disk or quota, whichever call met it (a write, the journal's
        // creation, a checkpoint): named, where SQLite says "disk I/O error".
        let systemCall = primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN
        if primary == SQLITE_FULL || (systemCall && (systemErrno == ENOSPC || systemErrno == EDQUOT)) {
            let space = systemErrno == EDQUOT ? "disk quota exceeded" : "no space left on device"
            return MsgError(.storeIO, "store \(path): \(space) while \(what); nothing of it was stored, and what was stored before is kept",
                            underlying: self)
        }
        switch primary {
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            return MsgError(.corrupt, "store \(path) is damaged (\(String(cString: sqlite3_errstr(code)))) while \(what)", underlying: self)
        case SQLITE_READONLY where Self.onReadOnlyFileSystem(path):
            return MsgError(.storeIO, "store \(path) cannot be written: it is on a read-only file system (while \(what))", underlying: self)
        case SQLITE_READONLY:
            return MsgError(.noPermission, "store \(path) cannot be written by this user: the file or its directory is read-only to it (while \(what))", underlying: self)
        case SQLITE_BUSY, SQLITE_LOCKED:
            return MsgError(.storeIO, "store \(path) stayed locked by another process while \(what)", underlying: self)
        case SQLITE_CANTOPEN where systemErrno == EACCES || systemErrno == EPERM, SQLITE_PERM, SQLITE_AUTH:
            return MsgError(.noPermission, "cannot open store \(path): \(SystemCalls.describe(systemErrno == 0 ? EACCES : systemErrno))", underlying: self)
        case SQLITE_CANTOPEN:
            return MsgError(.storeIO, "cannot open store \(path) (\(String(cString: sqlite3_errstr(code))))", underlying: self)
        default:
            return MsgError(.storeIO, "store \(path): \(String(cString: sqlite3_errstr(code))) while \(what)", underlying: self)
        }
    }

    /// Whether the file system holding `path` is mounted read-only: then a refused
    /// write is the store's trouble (74), not this user's permission (77).
    static func onReadOnlyFileSystem(_ path: String) -> Bool {
        var fs = statvfs()
        return statvfs(SystemCalls.directory(of: path), &fs) == 0 && fs.f_flag & UInt(ST_RDONLY) != 0
    }
}
