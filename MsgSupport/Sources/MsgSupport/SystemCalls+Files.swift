#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// File-system helpers for places another user might plant a link, and for
/// setting damaged files aside.
extension SystemCalls {
    /// The first line of `path`, a secret only its owner may read (a token, a
    /// password), spaces around it taken off. - Throws: `config` naming `what` and
    /// the file: others may read it, it cannot be read, or the line is empty.
    public static func readSecretLine(_ path: String, what: String) throws(MsgError) -> String {
        let bytes = try readPrivateFile(path, what: what)
        let line = String(decoding: bytes.prefix { $0 != 0x0A && $0 != 0x0D }, as: UTF8.self).trimmingSpaces()
        guard !line.isEmpty else { throw MsgError(.config, "\(what) \(path) is empty") }
        return line
    }

    /// The bytes of a secret file (a token, a password file, a signing key): one that
    /// only its owner may read, as ssh and libpq require.
    /// - Throws: `config` naming the file (`what` says what it is for) when it cannot
    ///   be read or group or others may read it.
    public static func readPrivateFile(_ path: String, what: String) throws(MsgError) -> [UInt8] {
        let fd = try open(path, O_RDONLY | O_CLOEXEC, code: .config)
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw error(.config, "cannot read \(what) \(path)") }
        guard info.st_mode & 0o077 == 0 else {
            throw MsgError(.config, "\(what) \(path) can be read by others; chmod 0600 it")
        }
        return try readToEnd(fd, code: .config, what: "\(what) \(path)")
    }

    /// Whether something (a file, a directory, a link, even a dangling one) is at `path`.
    public static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// Whether `path` is a directory, or a symbolic link to one.
    public static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// Whether `path` is a directory itself, not a symbolic link to one.
    public static func isRealDirectory(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// Renames `from` to `to` unless something is at `to` already (`RENAME_NOREPLACE`).
    /// - Returns: whether it was renamed; `errno` says why not.
    public static func renameNoReplace(_ from: String, _ to: String) -> Bool {
        if renameat2(AT_FDCWD, from, AT_FDCWD, to, 1 /* RENAME_NOREPLACE */) == 0 { return true }
        guard errno == EINVAL || errno == ENOSYS else { return false }
        // A file system without RENAME_NOREPLACE: a hard link fails on an existing name.
        guard link(from, to) == 0 else { return false }
        return unlink(from) == 0
    }

    /// The names in directory `dir` (without `.` and `..`); empty when it cannot be read.
    public static func names(in dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let entry = readdir(d) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Runs `body` holding an exclusive `flock` on directory `dir`, so that two
    /// processes deciding about one file in it take turns.
    /// - Throws: `code` when the lock cannot be taken; what `body` throws.
    public static func withDirectoryLock<R>(_ dir: String, code: MsgError.Code, _ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        let fd = try open(dir, O_RDONLY | O_DIRECTORY, code: code)
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            if errno != EINTR { throw error(code, "cannot lock directory \(dir)") }
        }
        return try body()
    }

    /// Creates a new file at `path` for writing; never opens an existing file or
    /// follows a symbolic link planted there (`O_CREAT | O_EXCL | O_NOFOLLOW`).
    /// - Throws: `code` when anything is at `path` already, or on failure.
    public static func createExclusive(_ path: String, mode: mode_t = 0o600, code: MsgError.Code) throws(MsgError) -> Int32 {
        try open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode, code: code)
    }

    /// A name beside `path` that nobody can guess in advance: `PATH.tmp-<random>`.
    public static func unpredictableName(beside path: String) -> String {
        var random = SystemRandomNumberGenerator()
        let a = random.next(), b = random.next()
        return "\(path).tmp-\(String(a, radix: 36))\(String(b, radix: 36))"
    }
}

/// glibc's `renameat2(2)`, which its Swift module hides behind `_GNU_SOURCE`.
@_silgen_name("renameat2")
private func renameat2(_ olddirfd: Int32, _ oldpath: UnsafePointer<CChar>, _ newdirfd: Int32, _ newpath: UnsafePointer<CChar>, _ flags: UInt32) -> Int32
