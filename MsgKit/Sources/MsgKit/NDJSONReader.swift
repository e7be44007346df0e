#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// Reads numbered lines from a file descriptor in batches of what has already arrived.
///
/// ``nextBatch()`` blocks for the first bytes, then takes whatever else is
/// ready without waiting, up to ``maxBatch`` lines. A pipeline stage can thus
/// commit a batch in one transaction and acknowledge it at once: a large
/// stream is read in large batches, a line typed by hand is a batch of one
/// and is never held back waiting for more input.
public struct NDJSONReader: Sendable {
    /// One input line and its 1-based number.
    public struct Line: Sendable {
        /// The line number in the input.
        public let number: Int
        /// The line's bytes, or the error that makes it unusable (too long).
        public let bytes: Result<[UInt8], MsgError>

        /// The line as a JSON value.
        /// - Returns: the value, or a `badInput` error whose message names the problem (not the line number).
        public func json() -> Result<JSONValue, MsgError> {
            bytes.flatMap { bytes in
                do throws(MsgError) { return .success(try JSONParser.parseInput(bytes)) } catch { return .failure(error) }
            }
        }

        /// The line as text (for bare ids); nil when it is not valid UTF-8.
        public var text: String? {
            guard case .success(let b) = bytes else { return nil }
            return String(validating: b, as: UTF8.self)
        }
    }

    private let fd: Int32
    private var splitter: LineSplitter
    private var buffer: [UInt8]
    private var atEnd = false
    /// The most lines one batch holds.
    public var maxBatch: Int

    /// A reader of `fd` (standard input by default).
    public init(fd: Int32 = 0, maxLineLength: Int = LineSplitter.defaultMaxLineLength, maxBatch: Int = 4096) {
        self.fd = fd
        self.splitter = LineSplitter(maxLineLength: maxLineLength)
        self.buffer = [UInt8](repeating: 0, count: 1 << 16)
        self.maxBatch = maxBatch
    }

    /// The next batch of lines; nil at the end of the input.
    /// - Throws: `MsgError.badInput` when the input cannot be read.
    public mutating func nextBatch() throws(MsgError) -> [Line]? {
        var lines: [Line] = []
        while !atEnd {
            if !lines.isEmpty && (lines.count >= maxBatch || !readable()) { break }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                // A closed descriptor (cron or CI with no stdin at all) is no input.
                if errno == EBADF { atEnd = true; break }
                throw Posix.error(.badInput, "cannot read standard input")
            }
            if n == 0 {
                atEnd = true
                let limit = splitter.maxLineLength
                splitter.finish { lines.append(Self.line($0, limit: limit)) }
                break
            }
            let limit = splitter.maxLineLength
            buffer.withUnsafeBufferPointer { all in
                splitter.feed(UnsafeBufferPointer(rebasing: all[0..<n])) { lines.append(Self.line($0, limit: limit)) }
            }
        }
        return lines.isEmpty && atEnd ? nil : lines
    }

    private static func line(_ event: LineSplitter.Event, limit: Int) -> Line {
        switch event {
        case .line(let number, let bytes):
            return Line(number: number, bytes: .success(bytes))
        case .tooLong(let number):
            return Line(number: number, bytes: .failure(MsgError(.badInput, "line longer than the limit of \(limit) bytes")))
        }
    }

    /// Whether a read would return at once (data or end of input).
    private func readable() -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) > 0
    }
}
