/// Splits a byte stream into numbered lines, whatever the chunk boundaries.
///
/// Handles `\n` and `\r\n`, skips blank lines (they still count for line numbers),
/// and refuses a line longer than ``maxLineLength`` without keeping more than
/// that many bytes of it in memory. A last line without a newline is emitted by
/// ``finish(_:)``. It never stops by itself: every problem is an event.
public struct LineSplitter: Sendable {
    /// One event: a line's bytes, or a line that was too long.
    public enum Event: Equatable, Sendable {
        /// A non-blank line (without its `\r\n` or `\n`) and its 1-based number.
        case line(number: Int, bytes: [UInt8])
        /// A line longer than the limit, and its number.
        case tooLong(number: Int)
    }

    /// The longest line accepted, in bytes (default 1 MiB).
    public let maxLineLength: Int
    private var partial: [UInt8] = []
    private var discarding = false
    private var lineNumber = 0

    /// The default limit: 1 MiB.
    public static let defaultMaxLineLength = RecordLimits.maxRecordBytes

    /// A splitter refusing lines longer than `maxLineLength` bytes.
    public init(maxLineLength: Int = LineSplitter.defaultMaxLineLength) {
        self.maxLineLength = maxLineLength
    }

    /// Feeds the next chunk; calls `emit` for every line it completes.
    public mutating func feed(_ chunk: UnsafeBufferPointer<UInt8>, _ emit: (Event) throws -> Void) rethrows {
        var start = 0
        let count = chunk.count
        while start < count {
            // Find the next newline.
            var end = start
            while end < count && chunk[end] != 0x0A { end += 1 }
            let piece = UnsafeBufferPointer(rebasing: chunk[start..<end])
            if end == count {
                append(piece)
                return
            }
            // A full line: piece completes it.
            lineNumber += 1
            if discarding || partial.count + piece.count > maxLineLength + 1 {
                reset()
                try emit(.tooLong(number: lineNumber))
            } else if partial.isEmpty {
                try emitLine(piece, emit)
            } else {
                partial.append(contentsOf: piece)
                let line = partial
                partial.removeAll(keepingCapacity: true)
                try line.withUnsafeBufferPointer { try emitLine($0, emit) }
            }
            start = end + 1
        }
    }

    /// Feeds the next chunk from an array.
    public mutating func feed(_ chunk: [UInt8], _ emit: (Event) throws -> Void) rethrows {
        try chunk.withUnsafeBufferPointer { try feed($0, emit) }
    }

    /// Ends the stream: emits a last line that had no newline.
    public mutating func finish(_ emit: (Event) throws -> Void) rethrows {
        guard discarding || !partial.isEmpty else { return }
        lineNumber += 1
        if discarding {
            reset()
            try emit(.tooLong(number: lineNumber))
        } else {
            let line = partial
            partial.removeAll()
            try line.withUnsafeBufferPointer { try emitLine($0, emit) }
        }
    }

    private mutating func reset() {
        partial.removeAll(keepingCapacity: false)
        discarding = false
    }

    private mutating func append(_ piece: UnsafeBufferPointer<UInt8>) {
        if discarding {
            return
        } else if partial.count + piece.count > maxLineLength + 1 {
            // +1 leaves room for a '\r' that a CRLF line ends with.
            discarding = true
            partial.removeAll(keepingCapacity: false)
        } else {
            partial.append(contentsOf: piece)
        }
    }

    private func emitLine(_ raw: UnsafeBufferPointer<UInt8>, _ emit: (Event) throws -> Void) rethrows {
        var line = raw
        if let last = line.last, last == 0x0D { line = UnsafeBufferPointer(rebasing: line.dropLast()) }
        if line.count > maxLineLength {
            try emit(.tooLong(number: lineNumber))
            return
        }
        var blank = true
        for byte in line where byte != 0x20 && byte != 0x09 && byte != 0x0D {
            blank = false
            break
        }
        if blank { return }
        try emit(.line(number: lineNumber, bytes: Array(line)))
    }
}
