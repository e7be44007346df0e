/// Writes records as NDJSON: compact, one record per line, UTF-8.
///
/// This is the one place that turns records into output lines. By default it
/// flushes after every line, so the next stage of a pipeline sees each
/// acknowledged record at once. A command that produces lines without ever
/// waiting (a listing) may set ``flushEveryLine`` to false: then output is
/// written in 64 KiB blocks and at ``finish()``, which no reader can tell
/// apart from per-line flushing except by speed.
public final class NDJSONWriter {
    private let output: ByteOutput
    private var writer = JSONWriter(capacity: 1024)
    /// Whether every line is written out as soon as it is complete.
    public var flushEveryLine: Bool

    /// A writer to `output` (standard output by default).
    public init(output: ByteOutput = ByteOutput(), flushEveryLine: Bool = true) {
        self.output = output
        self.flushEveryLine = flushEveryLine
    }

    /// Writes one record line. - Throws: `MsgError.storeIO` when the output fails.
    public func write(_ message: Message, includeHistory: Bool = true) throws(MsgError) {
        writer.bytes.removeAll(keepingCapacity: true)
        message.write(to: &writer, includeHistory: includeHistory)
        try emit()
    }

    /// Writes one record line as a destination receives it (``EncodedMessage/deliveredJSON``).
    /// - Throws: `MsgError.storeIO` when the output fails.
    public func writeDelivered(_ record: EncodedMessage) throws(MsgError) {
        try writeRaw(record.deliveredJSON)
    }

    /// Writes one line of JSON text that is already compact and valid (a store's
    /// stored record). - Throws: `MsgError.storeIO`.
    public func writeRaw(_ json: [UInt8]) throws(MsgError) {
        try json.withUnsafeBufferPointer { (b) throws(MsgError) in try writeRaw(b) }
    }

    /// Writes an encoded record without its history (as `queue ls` shows records),
    /// from its bytes. - Throws: `MsgError.storeIO`.
    public func writeWithoutHistory(_ record: EncodedMessage) throws(MsgError) {
        output.buffer.append(contentsOf: record.json[..<record.historyOffset])
        output.buffer.append(UInt8(ascii: "}"))
        output.buffer.append(0x0A)
        if flushEveryLine { try output.flush() } else { try output.flushIfLarge() }
    }

    /// Writes one line of JSON text that is already compact and valid. - Throws: `MsgError.storeIO`.
    public func writeRaw(_ json: UnsafeBufferPointer<UInt8>) throws(MsgError) {
        output.buffer.append(contentsOf: json)
        output.buffer.append(0x0A)
        if flushEveryLine { try output.flush() } else { try output.flushIfLarge() }
    }

    /// Writes one JSON value as a line. - Throws: `MsgError.storeIO`.
    public func write(_ value: JSONValue) throws(MsgError) {
        writer.bytes.removeAll(keepingCapacity: true)
        writer.value(value)
        try emit()
    }

    private func emit() throws(MsgError) {
        writer.bytes.append(0x0A)
        output.write(writer.bytes)
        if flushEveryLine { try output.flush() } else { try output.flushIfLarge() }
    }

    /// Writes out anything still buffered. - Throws: `MsgError.storeIO`.
    public func finish() throws(MsgError) { try output.flush() }
}
