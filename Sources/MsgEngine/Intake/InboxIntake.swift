import Dispatch
import MsgKit
import MsgSupport

/// Takes an application's inbox into the queue (msg-inbox(1), docs/DESIGN.md 5):
/// the transactional outbox's second half.
///
/// Each batch of rows, oldest first, becomes records stored in durable commits of
/// the store; the inbox removes the rows only after those, in its own commit
/// (``DraftInbox``, requirement 1). A row's message is stored under the draft's own
/// `id` when it carries one (its idempotency key), else under the id the row fixes
/// (requirement 2). So a kill between the commits leaves rows that the next drain
/// takes again and the store refuses as already stored: nothing lost, nothing twice.
///
/// A row that is not a valid draft never blocks the inbox: it becomes a `dead`
/// record under the row's id, with the reason as its error and the row's whole text
/// kept in ``InboxIntake/draftKey``, shown by `msg queue ls --status dead`. A text
/// too large for a record (over msg's limit) is kept whole in a file of its own,
/// made durable before the row is taken, which the record names
/// (``InboxIntake/draftFileKey``): what the application committed is never cut.
public struct InboxIntake {
    /// The rows taken at a time, in one commit of the inbox: four of the store's
    /// (``chunk``), each chunk's records made while the one before is committed.
    public static let batch = 4 * chunk
    /// The records stored in one commit of the store.
    public static let chunk = 4096
    /// The field of a refused row's record that keeps the row's text
    /// (`inbox_draft_hex` when it was not UTF-8).
    public static let draftKey = "inbox_draft"
    /// The field of a refused row's record that names the file keeping the row's
    /// text, when the text does not fit in a record.
    public static let draftFileKey = "inbox_draft_file"

    /// What a drain did.
    public struct Summary: Sendable, Equatable {
        /// Rows taken out of the inbox.
        public var taken = 0
        /// Messages queued by this drain.
        public var stored = 0
        /// Rows whose message was stored already (taken again after a crash, or an
        /// idempotency key given twice).
        public var duplicates = 0
        /// Rows that were not valid drafts, stored dead by this drain.
        public var refused = 0

        public init() {}

        /// Adds another drain's figures.
        public mutating func add(_ other: Summary) {
            taken += other.taken
            stored += other.stored
            duplicates += other.duplicates
            refused += other.refused
        }
    }

    private let target: Target
    private let drafts: Drafts
    private let clock: () -> Timestamp
    private let faults: FaultPoints?
    private let keep: RefusedDrafts

    /// The store, opened when the first row comes (a flush whose inboxes are empty
    /// opens nothing more).
    private final class Target {
        private let open: () throws(MsgError) -> any Store
        private var opened: (any Store)?
        init(_ open: @escaping () throws(MsgError) -> any Store) { self.open = open }
        func store() throws(MsgError) -> any Store {
            if let opened { return opened }
            let s = try open()
            opened = s
            return s
        }
    }

    /// An intake completing drafts with `drafts` and storing into the store `open`
    /// opens when the first row comes; `faults` may kill it between a batch's
    /// commits (``FaultPoints/Point/afterIntake``); a refused row's text too large
    /// for its record is kept in `refused` (``RefusedDrafts``).
    public init(opening open: @escaping () throws(MsgError) -> any Store, drafts: Drafts = Drafts(), refused: RefusedDrafts,
                faults: FaultPoints? = nil, clock: @escaping () -> Timestamp = { Timestamp.now() }) {
        self.target = Target(open)
        self.drafts = drafts
        self.keep = refused
        self.faults = faults
        self.clock = clock
    }

    /// Takes everything in `inbox` into the store, a batch at a time, until it is empty.
    /// - Parameter progress: told the rows taken so far.
    /// - Throws: the inbox's or the store's errors; what was taken before is stored
    ///   and removed, the batch that failed stays in the inbox.
    /// - Parameter stored: told each row's record as stored (the one stored before,
    ///   for a duplicate) after its batch's commit to the store.
    public func drain(_ inbox: any DraftInbox, progress: ((Summary) -> Void)? = nil,
                      stored: ((EncodedMessage, AddResult) throws(MsgError) -> Void)? = nil) throws(MsgError) -> Summary {
        var summary = Summary()
        while true {
            var batch = Summary()
            let n = try inbox.take(limit: Self.batch) { (rows) throws(MsgError) in
                batch = try self.store(rows, stored)
            }
            summary.add(batch)
            progress?(summary)
            if n < Self.batch { return summary }
        }
    }

    /// Stores one batch of rows, a chunk a commit; the next chunk's records are made
    /// on another thread while this one's commit runs, as `queue add` decodes beside
    /// its commits. - Throws: the store's errors.
    func store(_ rows: [InboxRow], _ stored: ((EncodedMessage, AddResult) throws(MsgError) -> Void)? = nil) throws(MsgError) -> Summary {
        var summary = Summary()
        summary.taken = rows.count
        guard !rows.isEmpty else { return summary }
        let store = try target.store()
        let (drafts, keep, now) = (self.drafts, self.keep, clock())
        let chunks = stride(from: 0, to: rows.count, by: Self.chunk).map { Array(rows[$0..<min($0 + Self.chunk, rows.count)]) }
        // The first chunk on both cores; each next one on one, beside the commit.
        var made = MsgKit.parallelMap(chunks[0]) { Self.record($0, drafts: drafts, keep: keep, now: now) }
        for i in chunks.indices {
            var next: Channel<[Made]>?
            if i + 1 < chunks.count {
                let made = Channel<[Made]>(capacity: 1)
                let chunk = chunks[i + 1]
                DispatchQueue.global().async { made.send(chunk.map { Self.record($0, drafts: drafts, keep: keep, now: now) }) }
                next = made
            }
            // A text that could not be kept leaves the batch in the inbox.
            let records = try made.map { (m) throws(MsgError) in try m.record.get() }
            for (j, result) in try store.add(records).enumerated() {
                if !result.inserted {
                    summary.duplicates += 1
                } else if made[j].refused {
                    summary.refused += 1
                } else {
                    summary.stored += 1
                }
                try stored?(records[j], result)
            }
            made = next?.receive() ?? []
        }
        faults?.pass(.afterIntake, count: rows.count)
        return summary
    }

    /// What a row became: its record (or why its text could not be kept), and
    /// whether it was refused.
    typealias Made = (record: Result<EncodedMessage, MsgError>, refused: Bool)

    /// The record a row becomes, completed by `drafts`, and whether it was refused
    /// (then dead since `now`, its text kept as ``refused(_:_:keep:now:)`` says).
    static func record(_ row: InboxRow, drafts: Drafts, keep: RefusedDrafts, now: Timestamp) -> Made {
        do throws(MsgError) {
            let m = try drafts.complete(JSONParser.parseInput(row.draft), id: row.id, createdAt: row.insertedAt)
            return (.success(try RecordPipeline.encode(m, store: true).get()), false)
        } catch {
            do throws(MsgError) {
                return (.success(try refused(row, error, keep: keep, now: now)), true)
            } catch {
                return (.failure(error), true)
            }
        }
    }

    /// The dead record of a row that is not a valid draft, keeping its whole text:
    /// in the record when the record then fits msg's limit, else in a file of its
    /// own (``RefusedDrafts``), durable before this returns.
    /// - Throws: what writing that file throws; the row then stays in the inbox.
    static func refused(_ row: InboxRow, _ error: MsgError, keep: RefusedDrafts, now: Timestamp) throws(MsgError) -> EncodedMessage {
        // A text over the limit cannot fit, whatever its record: straight to its file.
        if row.draft.count <= RecordLimits.maxRecordBytes {
            let inRecord = dead(row, error, now: now, kept: text(row.draft), in: draftKey)
            if inRecord.json.count <= RecordLimits.maxRecordBytes { return inRecord }
        }
        let file = try keep.keep(row.draft, id: row.id)
        return dead(row, error, now: now, kept: [JSONValue.Member(draftFileKey, .string(file))], in: file)
    }

    /// The dead record of `row`, refused for `error`, with `kept` as its fields
    /// that keep the row's text, which is in `place`.
    private static func dead(_ row: InboxRow, _ error: MsgError, now: Timestamp, kept: [JSONValue.Member], in place: String) -> EncodedMessage {
        let failure = Message.Failure(MsgError(.badInput, "inbox row is not a valid draft: \(error.message); its text is kept whole in \(place)"), at: now)
        var m = Message(id: row.id, to: recipient(row.draft) ?? "?", body: "", now: row.insertedAt ?? now)
        m.status = .dead
        m.updatedAt = now
        m.lastError = failure
        m.history = [Message.Event(at: now, event: "refused", status: .dead, error: failure)]
        m.extra = kept
        return EncodedMessage(m, preparingLedger: true)
    }

    /// The field keeping `draft` as it came: as text, or in hex when it is not UTF-8.
    private static func text(_ draft: [UInt8]) -> [JSONValue.Member] {
        if let s = String(validating: draft, as: UTF8.self) { return [JSONValue.Member(draftKey, .string(s))] }
        return [JSONValue.Member(draftKey + "_hex", .string(Hex.encode(draft)))]
    }

    /// The draft's recipient, when it names one: where a refused row was meant to go.
    static func recipient(_ draft: [UInt8]) -> String? {
        guard let json = try? JSONParser.parseInput(draft), case .object(let members) = json,
              let to = members.first(where: { $0.key == RecordField.to.key }), case .string(let s) = to.value, !s.isEmpty,
              s.utf8.count <= 1024, !s.contains(where: \.isNewline) else { return nil }
        return s
    }
}

