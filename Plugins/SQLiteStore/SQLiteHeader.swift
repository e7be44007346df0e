#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// The first 100 bytes of a database file, read by msg itself before SQLite is let
/// near the file: they say whether it is a SQLite database at all and whether it is
/// msg's (https://www.sqlite.org/fileformat2.html#the_database_header).
struct SQLiteHeader {
    /// `PRAGMA application_id` of a msg store: "msg" and a zero byte.
    static let msgApplicationID: UInt32 = 0x6D73_6700

    /// What the file is.
    enum Kind: Equatable {
        /// Empty: a store being created.
        case empty
        /// Not a SQLite database (the magic string is not there).
        case notSQLite
        /// A SQLite database; `ours` when it carries msg's application id, or has none
        /// and a schema version msg wrote (stores made before the id was set).
        case sqlite(ours: Bool, userVersion: UInt32, applicationID: UInt32)
    }

    /// Reads the header through `fd` (from offset 0, without moving it).
    /// - Throws: `storeIO` when the file cannot be read.
    static func read(_ fd: Int32, path: String) throws(MsgError) -> Kind {
        var bytes = [UInt8](repeating: 0, count: 100)
        var n = 0
        while n < bytes.count {
            let got = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + n, $0.count - n, off_t(n)) }
            if got < 0 {
                if errno == EINTR { continue }
                throw SystemCalls.error(.storeIO, "cannot read store \(path)")
            }
            if got == 0 { break }
            n += got
        }
        if n == 0 { return .empty }
        guard n >= 16, bytes[0..<16].elementsEqual(Array("SQLite format 3\0".utf8)) else { return .notSQLite }
        guard n >= 72 else { return .sqlite(ours: false, userVersion: 0, applicationID: 0) }
        func u32(_ at: Int) -> UInt32 { bytes[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        let version = u32(60), application = u32(68)
        let ours = application == msgApplicationID || (application == 0 && version >= 1 && Int64(version) <= SQLiteSchema.current)
        return .sqlite(ours: ours, userVersion: version, applicationID: application)
    }
}
