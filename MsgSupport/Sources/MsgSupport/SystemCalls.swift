#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif
import MsgKit

/// Thin wrappers over the POSIX calls msg's durability rests on.
///
/// Each throws a ``MsgError`` with the caller's code and the errno kept as
/// the underlying error, so a full disk reads "msg: cannot write queue.json: No space
/// left on device" and exits 74, never a Swift trap.
public enum SystemCalls {
    /// The text of an errno value, e.g. "No space left on device".
    public static func describe(_ errnoValue: Int32) -> String {
        guard let text = strerror(errnoValue) else { return "errno \(errnoValue)" }
        return String(cString: text)
    }

    /// Builds the error for a failed call: "`what`: `strerror`".
    /// A store's file refused for permission (EACCES, EPERM) is `noPermission` (exit
    /// 77), not damage; a read-only file system stays a store I/O error (74).
    public static func error(_ code: MsgError.Code, _ what: String, errno value: Int32 = errno) -> MsgError {
        let denied = code == .storeIO && (value == EACCES || value == EPERM)
        return MsgError(denied ? .noPermission : code, "\(what): \(describe(value))", underlying: Errno(value))
    }

    /// Opens `path`, retrying on EINTR. - Throws: `code` on failure.
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o600, code: MsgError.Code) throws(MsgError) -> Int32 {
        while true {
            let fd = Glibc.open(path, flags | O_CLOEXEC, mode)
            if fd >= 0 { return fd }
            if errno != EINTR { throw error(code, "cannot open \(path)") }
        }
    }

    /// Writes all of `bytes` to `fd`, retrying short writes and EINTR.
    /// - Throws: `code` on failure (ENOSPC, EIO, EPIPE…).
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, code: MsgError.Code, what: @autoclosure () -> String) throws(MsgError) {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw error(code, "cannot write \(what())")
            }
            offset += n
        }
    }

    /// Writes all of `bytes` to `fd`. - Throws: `code` on failure.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8], code: MsgError.Code, what: @autoclosure () -> String) throws(MsgError) {
        let name = what()
        do {
            try bytes.withUnsafeBytes { raw in try writeAll(fd, raw, code: code, what: name) }
        } catch let error as MsgError {
            throw error
        } catch {
            throw MsgError(code, "cannot write \(name)")
        }
    }

    /// Flushes `fd`'s data and metadata to stable storage. - Throws: `code` on failure.
    public static func fsync(_ fd: Int32, code: MsgError.Code, what: @autoclosure () -> String) throws(MsgError) {
        while Glibc.fsync(fd) != 0 {
            if errno != EINTR { throw error(code, "cannot sync \(what())") }
        }
    }

    /// Makes a rename or creation inside `directory` durable by syncing the directory.
    /// - Throws: `code` on failure.
    public static func fsyncDirectory(_ directory: String, code: MsgError.Code) throws(MsgError) {
        let fd = try open(directory, O_RDONLY | O_DIRECTORY, code: code)
        defer { close(fd) }
        try fsync(fd, code: code, what: directory)
    }

    /// The directory part of `path` ("." when there is none).
    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// Creates `path` and its missing parents with `mode` (0700 by default).
    /// - Throws: `code` when a component cannot be created.
    public static func makeDirectories(_ path: String, mode: mode_t = 0o700, code: MsgError.Code) throws(MsgError) {
        var st = stat()
        if stat(path, &st) == 0 {
            if (st.st_mode & S_IFMT) == S_IFDIR { return }
            throw MsgError(code, "\(path) exists and is not a directory")
        }
        let parent = directory(of: path)
        if parent != path && parent != "." && parent != "/" {
            try makeDirectories(parent, mode: mode, code: code)
        }
        if mkdir(path, mode) != 0 && errno != EEXIST {
            throw error(code, "cannot create directory \(path)")
        }
    }

    /// Replaces `path` atomically with `bytes`: a temporary file beside it is
    /// written, synced and renamed over `path`, then the directory is synced.
    /// A crash leaves either the old file or the new one, never a mix.
    ///
    /// The temporary file has a name nobody can guess and is created afresh
    /// (`O_EXCL | O_NOFOLLOW`), so a link planted beside `path` is never written
    /// through; a link at `path` itself is replaced, not followed.
    /// - Throws: `code` on failure; the temporary file is removed.
    public static func replaceAtomically(_ path: String, with bytes: [UInt8], mode: mode_t = 0o600, code: MsgError.Code) throws(MsgError) {
        let file = try AtomicFile(replacing: path, mode: mode, code: code)
        try file.write(bytes)
        try file.commit()
    }

    /// The bytes of the file at `path`.
    /// - Throws: `code` naming it (`what` says what it is for) when it cannot be read.
    public static func readFile(_ path: String, code: MsgError.Code, what: String) throws(MsgError) -> [UInt8] {
        let fd = try open(path, O_RDONLY | O_CLOEXEC, code: code)
        defer { close(fd) }
        return try readToEnd(fd, code: code, what: "\(what) \(path)")
    }

    /// Reads the whole of `fd` from its current offset to its end.
    /// - Throws: `code` on a read error.
    public static func readToEnd(_ fd: Int32, code: MsgError.Code, what: @autoclosure () -> String) throws(MsgError) -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw error(code, "cannot read \(what())")
            }
            if n == 0 { return result }
            result.append(contentsOf: chunk[0..<n])
        }
    }

    /// The value of an environment variable, or nil when unset or empty.
    public static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }
}
