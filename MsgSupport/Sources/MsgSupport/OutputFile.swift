#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// A file written whole under ``OutputPath``'s rule: to a regular file (or none)
/// through an ``AtomicFile`` renamed over it at ``commit()``, to a stream in place.
public final class OutputFile {
    /// The path as the user named it.
    public let path: String
    private let atomic: AtomicFile?
    private var fd: Int32
    private let code: MsgError.Code

    /// Starts writing `path` for `option`. - Throws: as ``OutputPath/target``.
    public init(_ path: String, option: String, mode: mode_t = 0o600, streams: Bool = true, code: MsgError.Code) throws(MsgError) {
        self.path = path
        self.code = code
        switch try OutputPath.target(path, option: option, streams: streams, code: code) {
        case .file:
            atomic = try AtomicFile(replacing: path, mode: mode, code: code)
            fd = -1
        case .stream(let stream):
            atomic = nil
            fd = stream
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Whether the file is a stream written in place (no rename, no manifest beside it).
    public var isStream: Bool { atomic == nil }

    /// Appends `bytes`. - Throws: `code` on failure (a full device says so).
    public func write(_ bytes: [UInt8]) throws(MsgError) {
        if let atomic { return try atomic.write(bytes) }
        try SystemCalls.writeAll(fd, bytes, code: code, what: path)
    }

    /// Puts a regular file in place (durably); ends a stream's writing.
    public func commit() throws(MsgError) {
        if let atomic { return try atomic.commit() }
        let stream = fd
        fd = -1
        guard close(stream) == 0 || errno == EINTR else { throw SystemCalls.error(code, "cannot write \(path)") }
    }

    /// Writes `bytes` to `path` under the rule, whole. - Throws: as ``init``.
    public static func write(_ path: String, _ bytes: [UInt8], option: String, mode: mode_t = 0o600, streams: Bool = true, code: MsgError.Code) throws(MsgError) {
        let file = try OutputFile(path, option: option, mode: mode, streams: streams, code: code)
        try file.write(bytes)
        try file.commit()
    }
}
