/// A stored record whose text no longer reads as a record, for instance after an
/// edit of the database by hand (msg-record(5), DAMAGED RECORDS).
///
/// One such record must not stop the queue. A store gives it as a `dead` record
/// with a `corrupt` error that says what is wrong and keeps the text whole in
/// ``Message/damagedRecordKey``; a store opened for writing stores it so when it
/// comes across it in a claim. It is never attempted, and the rest keeps flowing.
extension EncodedMessage {
    /// The record given in place of damaged text stored under `id`.
    /// - Parameters:
    ///   - to, createdAt: what the store knows of the record apart from its text
    ///     (its indexed columns), so it keeps its place in listings.
    ///   - error: why the text was refused (from ``init(stored:historyOffset:)``).
    public static func damaged(id: String, to: String?, createdAt: Timestamp, text: [UInt8], error: MsgError, now: Timestamp) -> EncodedMessage {
        let failure = Message.Failure(MsgError(.corrupt, "record \(id) is damaged: \(error.message); its text is kept in \(Message.damagedRecordKey)"), at: now)
        var m = Message(id: id, to: to.flatMap { $0.isEmpty ? nil : $0 } ?? "?", body: "", now: createdAt)
        m.status = .dead
        m.updatedAt = now
        m.lastError = failure
        m.history = [Message.Event(at: now, event: "damaged", status: .dead, error: failure)]
        if let s = String(validating: text, as: UTF8.self) {
            m.extra = [JSONValue.Member(Message.damagedRecordKey, .string(s))]
        } else {
            m.extra = [JSONValue.Member(Message.damagedRecordKey + "_hex", .string(Hex.encode(text)))]
        }
        return EncodedMessage(m)
    }

    /// A record as a store gives it (``Store``, requirement 10): read from its stored
    /// text, or, when that does not read, its stand-in, made from what the store knows
    /// of it apart from the text.
    public static func stored(text: [UInt8], historyOffset: Int?, id: String, to: String?, createdAt: Timestamp,
                              now: Timestamp = .now()) -> EncodedMessage {
        do throws(MsgError) {
            return try EncodedMessage(stored: text, historyOffset: historyOffset)
        } catch {
            return .damaged(id: id, to: to, createdAt: createdAt, text: text, error: error, now: now)
        }
    }
}

extension Message {
    /// The field of a damaged record that keeps the text found in the store
    /// (`damaged_record_hex` when that text was not UTF-8).
    public static let damagedRecordKey = "damaged_record"

    /// Whether this is a damaged record given in place of stored text that did not
    /// read: it may be listed, shown, exported and removed, but not sent, edited or
    /// redriven (fix its text and add it again).
    public var isDamaged: Bool {
        status == .dead && lastError?.code == MsgError.Code.corrupt.name
            && extra.contains { $0.key == Self.damagedRecordKey || $0.key == Self.damagedRecordKey + "_hex" }
    }
}
