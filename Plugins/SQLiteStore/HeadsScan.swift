import MsgKit

/// A claim's candidates when most of what comes next in FIFO order belongs to
/// destinations the claim skips (a destination in flight, behind an open breaker,
/// throttled, paused, suspended): read per destination from its head, through
/// `messages_heads` (recipient, FIFO order), and merged into FIFO order, so the
/// messages waiting behind a skipped destination are never read, however many.
///
/// The rows given are exactly those the FIFO walk of ``SQLiteQuery/select(_:_:after:skipping:limit:)``
/// gives (the same terms, the same order, the same limit): a cost that follows the
/// destinations that may send and the rows taken, not the backlog.
struct HeadsScan {
    let db: SQLiteDatabase

    /// Entries of `messages_open` looked at to decide: when fewer than the rows
    /// wanted among them are to destinations not skipped, the heads are read.
    static func probeSize(_ want: Int) -> Int { max(256, want * 4) }

    /// Whether the next entries in FIFO order after `position` are mostly to
    /// skipped destinations, read from the index alone (no row is read).
    func isCrowded(after position: ClaimPosition?, skipping: Set<String>, want: Int) throws(MsgError) -> Bool {
        let s = try db.statement("""
            SELECT count(*), coalesce(sum(recipient NOT IN (SELECT value FROM json_each(?3))), 0) FROM (
                SELECT recipient FROM messages INDEXED BY messages_open
                WHERE open IS NOT NULL AND (created_at, id) > (?1, ?2) ORDER BY created_at, id LIMIT ?4)
            """)
        s.bind(1, position?.createdAt.milliseconds ?? Int64.min)
        s.bind(2, position?.id ?? "")
        s.bind(3, SQLiteQuery.jsonArray(skipping.sorted()))
        s.bind(4, Int64(Self.probeSize(want)))
        defer { s.reset() }
        guard try s.step("claiming messages") else { return false }
        let read = s.int64(0), free = s.int64(1)
        // The end of the queue is near: the walk reads no more than the probe did.
        if read < Int64(Self.probeSize(want)) { return false }
        return free < Int64(want)
    }

    /// The most destinations whose heads are read: past them (a queue of mostly
    /// one message per recipient) the walk is the cheaper way.
    static let mostHeads = 4096

    /// Up to `limit` rows matching `query` after `position`, in FIFO order, to
    /// destinations not in `skipping`: each destination's rows from its head,
    /// merged; nil when more than ``mostHeads`` destinations have open records.
    /// - Throws: storage errors.
    func candidates(_ query: Query, after position: ClaimPosition?, skipping: Set<String>, limit: Int) throws(MsgError) -> [Row.Copy]? {
        var heads: [Cursor] = []
        var recipient: String? = nil
        var seen = 0
        while let next = try nextRecipient(after: recipient) {
            recipient = next
            seen += 1
            if seen > Self.mostHeads { return nil }
            if skipping.contains(next) { continue }
            var c = Cursor(recipient: next, after: position, page: min(limit, 4))
            try fill(&c, query)
            if !c.rows.isEmpty { heads.append(c) }
        }
        var merge = HeadMerge(heads)
        var out: [Row.Copy] = []
        out.reserveCapacity(min(limit, 1024))
        while out.count < limit, let i = merge.first {
            out.append(merge.cursors[i].rows[merge.cursors[i].next])
            merge.cursors[i].next += 1
            if merge.cursors[i].next == merge.cursors[i].rows.count {
                if merge.cursors[i].more {
                    merge.cursors[i].page = min(limit, merge.cursors[i].page * 4)
                    try fill(&merge.cursors[i], query)
                }
            }
            merge.advanced(i)
        }
        return out
    }

    /// The first recipient after `recipient` (from the first when nil) that has open
    /// records: a seek in `messages_heads`.
    private func nextRecipient(after recipient: String?) throws(MsgError) -> String? {
        let s = try db.statement("""
            SELECT recipient FROM messages INDEXED BY messages_heads
            WHERE open IS NOT NULL AND recipient \(recipient == nil ? ">=" : ">") ?1 ORDER BY recipient LIMIT 1
            """)
        s.bind(1, recipient ?? "")
        defer { s.reset() }
        guard try s.step("claiming messages") else { return nil }
        return String(decoding: s.bytes(0), as: UTF8.self)
    }

    /// Reads the cursor's next page: rows of its recipient after its last row.
    private func fill(_ c: inout Cursor, _ query: Query) throws(MsgError) {
        let (sql, binder) = SQLiteQuery.selectHead(Row.columns, query, recipient: c.recipient, after: c.after, limit: c.page)
        let s = try db.statement(sql)
        binder(s)
        defer { s.reset() }
        var rows: [Row.Copy] = []
        while try s.step("claiming messages") { rows.append(Row(s).copy()) }
        c.more = rows.count == c.page
        if let last = rows.last { c.after = ClaimPosition(createdAt: Timestamp(milliseconds: last.createdAt), id: last.id) }
        c.rows = rows
        c.next = 0
    }

    /// One destination's rows read so far.
    struct Cursor {
        let recipient: String
        var after: ClaimPosition?
        var page: Int
        var rows: [Row.Copy] = []
        var next = 0
        /// Whether the last page was full: there may be more rows.
        var more = false

        init(recipient: String, after: ClaimPosition?, page: Int) {
            self.recipient = recipient
            self.after = after
            self.page = max(1, page)
        }

        var current: Row.Copy? { next < rows.count ? rows[next] : nil }
    }
}

/// The cursors of ``HeadsScan`` in a binary heap by their current row's FIFO
/// position, so the next row of the merge is found in O(log n) of the destinations.
struct HeadMerge {
    var cursors: [HeadsScan.Cursor]
    /// Indexes into `cursors`, a min-heap on the current row.
    private var heap: [Int]

    init(_ cursors: [HeadsScan.Cursor]) {
        self.cursors = cursors
        heap = Array(cursors.indices)
        for i in stride(from: heap.count / 2 - 1, through: 0, by: -1) { down(i) }
    }

    /// The cursor whose current row comes first, or nil when all are spent.
    var first: Int? { heap.first }

    /// The cursor `i` (the first) moved on: it goes down the heap, or out when spent.
    mutating func advanced(_ i: Int) {
        guard heap.first == i else { return }
        if cursors[i].current == nil {
            heap[0] = heap[heap.count - 1]
            heap.removeLast()
        }
        if !heap.isEmpty { down(0) }
    }

    private func less(_ a: Int, _ b: Int) -> Bool {
        guard let x = cursors[a].current, let y = cursors[b].current else { return cursors[a].current != nil }
        // As SQLite orders text (BINARY: the bytes), not as Swift orders strings.
        return x.createdAt != y.createdAt ? x.createdAt < y.createdAt : x.id.utf8.lexicographicallyPrecedes(y.id.utf8)
    }

    private mutating func down(_ start: Int) {
        var i = start
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < heap.count, less(heap[l], heap[m]) { m = l }
            if r < heap.count, less(heap[r], heap[m]) { m = r }
            if m == i { return }
            heap.swapAt(i, m)
            i = m
        }
    }
}
