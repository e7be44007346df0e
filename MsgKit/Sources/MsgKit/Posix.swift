#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// The few POSIX calls MsgKit itself makes (the output buffer, the NDJSON reader). The toolbox of wrappers host and plugins share is
/// MsgSupport's `SystemCalls`, outside the plugin contract; this stays internal so
/// it is not part of the ABI.
enum Posix {
    /// The text of an errno value, e.g. "No space left on device".
    static func describe(_ errnoValue: Int32) -> String {
        guard let text = strerror(errnoValue) else { return "errno \(errnoValue)" }
        return String(cString: text)
    }

    /// The error for a failed call: "`what`: `strerror`", the errno kept as underlying.
    static func error(_ code: MsgError.Code, _ what: String, errno value: Int32 = errno) -> MsgError {
        MsgError(code, "\(what): \(describe(value))", underlying: Errno(value))
    }

    /// The directory part of `path` ("." when there is none).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// Writes all of `bytes` to `fd`, retrying short writes and EINTR.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8], code: MsgError.Code, what: String) throws(MsgError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw error(code, "cannot write \(what)")
            }
            offset += n
        }
    }
}
