#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// A record together with its canonical JSON text: what crosses the plugin boundary
/// (docs/DESIGN.md 4).
///
/// `queue add` encodes records on its reading thread; stores write these bytes as
/// they are, give them back from ``Store/get(_:)``, ``Store/list(_:_:)`` and
/// ``Store/claim(_:limit:_:)``, and transports and listings write them without
/// encoding the record again. `history` is always the last key of the text (see
/// ``Message/write(to:includeHistory:)``), so the text without history is
/// `json[..<historyOffset] + "}"`.
public struct EncodedMessage: Sendable, Equatable {
    /// The record: a copy of it, so a retain and a release of each of its fields.
    /// A hot path reads the fields below, or the record where it is kept (``reading(_:)``).
    public var message: Message { box.message }
    /// The record's id, read where the record is kept.
    public var id: String { box.message.id }
    /// The record's recipient, read where the record is kept.
    public var to: String { box.message.to }
    /// The record's status, read where the record is kept.
    public var status: Status { box.message.status }
    /// `body` of the record where it is kept, not of a copy (``message``).
    public func reading<R, E: Error>(_ body: (borrowing Message) throws(E) -> R) throws(E) -> R {
        try body(box.message)
    }
    /// The record behind one reference: a record passes through claims, schedulers
    /// and outcomes by the thousand, and copying one reference instead of a
    /// message's dozen costs a dozen fewer retains each time.
    private let box: Box
    /// Its JSON text with history, compact, no newline.
    public let json: [UInt8]
    /// Where `,"history":` starts in ``json``.
    public let historyOffset: Int

    /// Encodes `message`.
    public init(_ message: Message) {
        let (json, offset) = RecordLayout.encode(message)
        self.init(message: message, json: json, historyOffset: offset)
    }

    /// Encodes `message` and makes what its change needs of the ledger
    /// (``LedgerPrep``) here, on the caller's thread, for a record about to be
    /// stored anew (`stored`) or to replace its row: a store's
    /// ``LedgerPrep/batch(_:stored:)`` then takes it instead of hashing before its
    /// commit (`queue add` makes it on the thread that decodes the next batch).
    public init(_ message: Message, preparingLedger stored: Bool) {
        let (json, offset) = RecordLayout.encode(message)
        self.json = json
        self.historyOffset = offset
        self.box = Box(message, prep: LedgerPrep(json, offset, message, stored: stored), stored: stored)
    }

    /// `record` with its life changed to `new`'s (status, attempts, times, error,
    /// lease) and `new`'s history events past `record`'s appended: the text is
    /// spliced (``RecordLayout/spliced(_:historyOffset:as:appending:)``), the body
    /// and the other events copied as bytes, not encoded again. When `new` differs
    /// in anything else, or the text is not in the order msg writes, `new` is
    /// encoded afresh: the result is the same bytes either way.
    public init(updating record: EncodedMessage, to new: Message) {
        // Read in place: a copy of the old message would retain each of its fields.
        let old = record.box
        if new.history.count >= old.message.history.count, new.id == old.message.id, new.to == old.message.to,
           new.body == old.message.body, new.from == old.message.from, new.headers == old.message.headers,
           new.extra == old.message.extra,
           let (json, offset) = record.json.withUnsafeBufferPointer({
               RecordLayout.spliced($0, historyOffset: record.historyOffset, as: new, appending: new.history[old.message.history.count...])
           }) {
            self.init(message: new, json: json, historyOffset: offset)
        } else {
            self.init(new)
        }
    }

    private init(message: Message, json: [UInt8], historyOffset: Int) {
        self.init(box: Box(message), json: json, historyOffset: historyOffset)
    }

    private init(box: Box, json: [UInt8], historyOffset: Int) {
        self.box = box
        self.json = json
        self.historyOffset = historyOffset
    }

    /// This record with what its change needs of the ledger (``LedgerPrep``) made
    /// here, on the caller's thread, as ``init(_:preparingLedger:)`` makes it: a
    /// flush's delivery worker makes an outcome's while the run's thread commits,
    /// and the store's ``LedgerPrep/batch(_:stored:)`` then hashes nothing.
    public func preparingLedger(stored: Bool) -> EncodedMessage {
        if box.prep != nil && box.stored == stored { return self }
        let m = box.message
        return EncodedMessage(box: Box(m, prep: LedgerPrep(json, historyOffset, m, stored: stored), stored: stored),
                              json: json, historyOffset: historyOffset)
    }

    /// What ``init(_:preparingLedger:)`` made for a change of this kind, if it did.
    func prepared(stored: Bool) -> LedgerPrep? {
        box.stored == stored ? box.prep : nil
    }

    /// Reads a record a store kept, given its text and where its history starts (nil
    /// when the store does not know). Text msg wrote is kept byte for byte; other
    /// text (edited by hand: no history last, a line break) is encoded afresh, so
    /// ``json`` is always one line with history last.
    /// - Throws: `corrupt` when the text is not a record; the store then gives
    ///   ``damaged(id:to:createdAt:text:error:now:)`` in its place.
    public init(stored json: [UInt8], historyOffset: Int?) throws(MsgError) {
        let message = try json.withUnsafeBufferPointer { (b) throws(MsgError) in try Message(decoding: b, origin: .stored) }
        guard let h = historyOffset, Self.isCanonical(json, historyOffset: h) else {
            self.init(message)
            return
        }
        self.init(message: message, json: json, historyOffset: h)
    }

    private static let historyKey = Array(#","history":["#.utf8)

    /// Whether `json` is one line whose history starts at `h`.
    private static func isCanonical(_ json: [UInt8], historyOffset h: Int) -> Bool {
        guard h > 0, h + historyKey.count < json.count, json.last == UInt8(ascii: "}"),
              json[h..<(h + historyKey.count)].elementsEqual(historyKey) else { return false }
        // A raw line break can only be whitespace between tokens (JSON strings escape it).
        return json.withUnsafeBufferPointer { b in
            guard let base = b.baseAddress else { return false }
            return memchr(base, 0x0A, b.count) == nil && memchr(base, 0x0D, b.count) == nil
        }
    }

    /// The JSON text without history.
    public var jsonWithoutHistory: [UInt8] {
        var out = Array(json[..<historyOffset])
        out.append(UInt8(ascii: "}"))
        return out
    }
}

extension EncodedMessage {
    /// Equal when the text is: the canonical text says all of the record.
    public static func == (a: EncodedMessage, b: EncodedMessage) -> Bool {
        a.historyOffset == b.historyOffset && a.json == b.json
    }

    /// A decoded record, shared by the copies of one encoded record.
    final class Box: Sendable {
        let message: Message
        /// The ledger's part made beforehand, and for which change (``prepared(stored:)``).
        let prep: LedgerPrep?
        let stored: Bool
        init(_ message: Message, prep: LedgerPrep? = nil, stored: Bool = false) {
            self.message = message
            self.prep = prep
            self.stored = stored
        }
    }
}
