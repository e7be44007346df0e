#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// A file written in full before it replaces `path` atomically: the bytes go to a
/// temporary file beside it as they come (a name nobody can guess, created with
/// `O_CREAT | O_EXCL | O_NOFOLLOW`), which ``commit()`` syncs and renames over
/// `path`. A crash, an error or a file never committed leaves `path` as it was.
public final class AtomicFile {
    /// The file to replace.
    public let path: String
    private let temporary: String
    private var fd: Int32
    private let code: MsgError.Code

    /// Starts a replacement of `path`. - Throws: `code` when the temporary file
    /// cannot be created.
    public init(replacing path: String, mode: mode_t = 0o600, code: MsgError.Code) throws(MsgError) {
        self.path = path
        self.code = code
        // Only a regular file is replaced: a link, a device or a FIFO there is not
        // msg's to rename over (``OutputPath``).
        var st = stat()
        if lstat(path, &st) == 0, st.st_mode & S_IFMT != S_IFREG {
            throw MsgError(code, "\(path) is a \(OutputPath.kind(st.st_mode)), not a file msg may replace; nothing was written there")
        }
        temporary = SystemCalls.unpredictableName(beside: path)
        fd = try SystemCalls.createExclusive(temporary, mode: mode, code: code)
    }

    deinit { abandon() }

    /// Appends `bytes`. - Throws: `code` on failure.
    public func write(_ bytes: [UInt8]) throws(MsgError) {
        try SystemCalls.writeAll(fd, bytes, code: code, what: temporary)
    }

    /// Makes the file durable and puts it at `path`, then makes the rename durable.
    /// - Throws: `code` on failure; `path` is then as it was.
    public func commit() throws(MsgError) {
        try SystemCalls.fsync(fd, code: code, what: temporary)
        close(fd)
        fd = -1
        guard rename(temporary, path) == 0 else {
            let failure = SystemCalls.error(code, "cannot rename \(temporary) to \(path)")
            unlink(temporary)
            throw failure
        }
        try SystemCalls.fsyncDirectory(SystemCalls.directory(of: path), code: code)
    }

    /// Gives up: removes the temporary file (nothing if already committed).
    public func abandon() {
        guard fd >= 0 else { return }
        close(fd)
        fd = -1
        unlink(temporary)
    }
}
