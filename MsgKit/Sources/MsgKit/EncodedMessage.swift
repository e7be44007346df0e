/// A record together with its canonical JSON text, encoded once.
///
/// `queue add` encodes records on its reading thread; stores write these bytes
/// as they are and the echo reuses them, so a record is encoded once on its way
/// in. `history` is always the last key of the text (see
/// ``Message/write(to:includeHistory:)``), so the text without history is
/// `json[..<historyOffset] + "}"`.
public struct EncodedMessage: Sendable, Equatable {
    /// The record.
    public let message: Message
    /// Its JSON text with history, compact, no newline.
    public let json: [UInt8]
    /// Where `,"history":` starts in ``json``.
    public let historyOffset: Int

    /// Encodes `message`.
    public init(_ message: Message) {
        var w = JSONWriter(capacity: 512)
        message.write(to: &w, includeHistory: false)
        let offset = w.bytes.count - 1
        w.bytes.removeLast()
        w.key("history")
        message.writeHistory(to: &w)
        w.raw("}")
        self.message = message
        self.json = w.bytes
        self.historyOffset = offset
    }

    /// The JSON text without history.
    public var jsonWithoutHistory: [UInt8] {
        var out = Array(json[..<historyOffset])
        out.append(UInt8(ascii: "}"))
        return out
    }
}
