#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import Synchronization

/// A buffered writer to a file descriptor (standard output by default).
///
/// Nothing is written until ``flush()``; callers flush after each record they
/// must not hold back (see ``NDJSONWriter``).
public final class ByteOutput {
    private let fd: Int32
    private let name: String
    /// The bytes not yet written.
    public var buffer: [UInt8] = []

    /// An output to `fd`, called `name` in error messages.
    public init(fd: Int32 = 1, name: String = "standard output") {
        self.fd = fd
        self.name = name
        buffer.reserveCapacity(1 << 16)
    }

    /// Appends text.
    public func write(_ text: String) { buffer.append(contentsOf: text.utf8) }

    /// Appends bytes.
    public func write(_ bytes: [UInt8]) { buffer.append(contentsOf: bytes) }

    /// Serializes writes to file descriptors across threads. Callers flush whole
    /// lines only, so with this lock two writers to one descriptor (flush's echo and a
    /// transport printing what it delivers) never interleave inside a line, even when a
    /// pipe splits a large write. A lock, not state: it guards no value.
    private static let writeLock = Mutex(())

    /// Writes out what is buffered. - Throws: `MsgError.storeIO` (exit 74) when the write fails.
    public func flush() throws(MsgError) {
        guard !buffer.isEmpty else { return }
        try Self.writeLock.withLock { (_) throws(MsgError) in
            try Posix.writeAll(fd, buffer, code: .storeIO, what: name)
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Writes out the buffer once it holds more than `threshold` bytes.
    public func flushIfLarge(_ threshold: Int = 1 << 16) throws(MsgError) {
        if buffer.count >= threshold { try flush() }
    }
}
