import MsgKit

/// The store's commit journal (``JournalStore``, ABI 10): what makes msg's counts,
/// `queue stats`, the scan's floors and hints and the whole ledger (`msg ledger
/// verify`, `sign`, `export --proof`) work on this store. Its cost is one list and
/// what the ledger keeps of each message:
/// - every change goes through a ``ChangeRecorder`` (``Snapshot/insert(_:)``,
///   ``Snapshot/replace(_:)``, ``Snapshot/delete(_:)``, ``Snapshot/wroteState()``),
///   which decides what it means; the store decides nothing;
/// - each commit appends what the recorder took (``CommitEffects``) as one
///   ``Commit``: its bytes, and its leaves numbered after the last commit's;
/// - each message keeps the facts the recorder chooses its next leaves from and the
///   numbers of its leaves (``Ledger``); a removed one keeps its numbers.
///
/// The file keeps them beside the records (``SnapshotStore``): the first line holds
/// the states, the ledger's lists and the values kept; each commit is a line
/// `{"$commit":"HEX","first":N,"count":N,"leaves":"HEX"}` after the records. A file written
/// before the journal (no `"whole"` on its first line) is not counted whole: msg
/// reads its records to count them, and its messages are ones stored before the
/// ledger began.
extension SnapshotStore.Snapshot {
    /// One commit: ``CommitEffects/journalBytes(into:)``, its first leaf's number and its leaves.
    struct Commit {
        var effects: [UInt8]
        var first: Int
        var count: Int
        var leaves: [UInt8]
    }

    /// What the ledger keeps of a stored message (``StoredFacts``, ``RowLedger``).
    struct Ledger {
        var entries: Int
        var print: Int64
        var list: [Int]
    }

    /// The number the next leaf gets.
    var leafEnd: Int { journal.last.map { $0.first + $0.count } ?? 0 }

    /// The facts the recorder needs of the stored `r`.
    func facts(_ r: EncodedMessage) -> StoredFacts {
        let m = r.message
        let l = ledger[m.id]
        return StoredFacts(id: m.id, status: m.status.rawValue, recipient: m.to, createdAt: m.createdAt,
                           ledgerEntries: l?.entries ?? -1, contentPrint: l?.print ?? 0)
    }

    /// Stores `r` anew.
    mutating func insert(_ r: EncodedMessage) throws(MsgError) {
        let row = try recorder.inserted(r, r.message, prep: LedgerPrep(r, stored: true))
        records[r.message.id] = r
        ledger[r.message.id] = Ledger(entries: row.entries, print: row.contentPrint, list: numbers(row.leaves))
    }

    /// Replaces the stored record of `r`'s id.
    mutating func replace(_ r: EncodedMessage) throws(MsgError) {
        let id = r.message.id
        guard let old = records[id] else { return }
        let row = try recorder.updated(r, r.message, from: facts(old), prep: LedgerPrep(r, stored: false))
        records[id] = r
        ledger[id] = Ledger(entries: row.entries, print: row.contentPrint, list: (ledger[id]?.list ?? []) + numbers(row.leaves))
    }

    /// Removes the record `id`; its list goes to the removed ones.
    mutating func delete(_ id: String) throws(MsgError) {
        guard let old = records[id] else { return }
        let leaves = try recorder.removed(facts(old))
        removed.append((id, (ledger[id]?.list ?? []) + numbers(leaves)))
        records[id] = nil
        ledger[id] = nil
    }

    /// A destination state written.
    mutating func wroteState() { recorder.wroteStates() }

    /// The numbers of a change's leaves (their places in this commit's run).
    private func numbers(_ leaves: Range<Int>) -> [Int] { leaves.map { leafEnd + $0 } }

    /// Appends what this commit recorded as its journal row (nothing for none).
    mutating func commit() {
        let effects = recorder.take()
        if effects.isEmpty { return }
        var bytes: [UInt8] = []
        effects.journalBytes(into: &bytes)
        journal.append(Commit(effects: bytes, first: leafEnd, count: effects.leafCount, leaves: effects.leaves))
    }

    /// Every commit folded: the counts (nil for a file written before the journal).
    var fold: CommitFold? {
        guard whole else { return nil }
        var fold = CommitFold()
        for c in journal { c.effects.withUnsafeBytes { _ = fold.add(journal: $0) } }
        fold.mark = Int64(journal.count)
        return fold
    }
}

extension SnapshotStore: JournalStore {
    public func journalFold<R>(_ body: (CommitFold?) throws(MsgError) -> R) throws(MsgError) -> R {
        try reading { (s) throws(MsgError) -> R in try body(s.fold) }
    }

    /// The mark is the number of commits; a mark further back than `limit` gets nil.
    public func journalFloors(since mark: Int64?, limit: Int) throws(MsgError) -> (mark: Int64, floors: [CommitEffects.Floor?]?) {
        try reading { s in
            let newest = Int64(s.journal.count)
            guard let mark, mark >= 0, mark <= newest, newest - mark <= Int64(limit) else { return (newest, nil) }
            return (newest, s.journal[Int(mark)...].map { c in c.effects.withUnsafeBytes { CommitEffects.floor(ofJournal: $0) } })
        }
    }

    public func kept(_ name: String) throws(MsgError) -> [UInt8]? {
        try reading { $0.kept[name] }
    }

    /// Written as any commit, with no journal row: nothing was recorded.
    public func keep(_ name: String, _ value: [UInt8]) throws(MsgError) {
        try writing { (s) throws(MsgError) in s.kept[name] = value }
    }

    public func ledgerRead<R>(_ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        try reading { _ throws(MsgError) -> R in try body() }
    }

    public func ledgerSize() throws(MsgError) -> Int {
        try reading { $0.leafEnd }
    }

    public func ledgerRuns(from: Int, _ body: (Int, UnsafeRawBufferPointer) throws(MsgError) -> Bool) throws(MsgError) {
        let runs = try reading { s in s.journal.filter { $0.count > 0 } }
        for c in runs where c.first + c.count > from {
            var more = true
            try c.leaves.withUnsafeBufferPointer { (b) throws(MsgError) in more = try body(c.first, UnsafeRawBufferPointer(b)) }
            if !more { return }
        }
    }

    public func ledgerMessages(_ body: (EncodedMessage?, String, [Int]?) throws(MsgError) -> Bool) throws(MsgError) {
        let s = try reading { $0 }
        for r in s.fifo {
            if try !body(r, r.message.id, s.ledger[r.message.id]?.list) { return }
        }
        for (id, list) in s.removed {
            if try !body(nil, id, list) { return }
        }
    }
}

// MARK: The file's lines

extension SnapshotStore.Snapshot {
    /// The first line: the states, and what the journal keeps beside its commits.
    var header: JSONValue {
        func list(_ numbers: [Int]) -> JSONValue { .array(numbers.map { .number(String($0)) }) }
        return .object([
            .init("states", .object(states.sorted { $0.key < $1.key }.map { .init($0.key, .string($0.value)) })),
            .init("whole", .bool(whole)),
            .init("ledger", .object(ledger.sorted { $0.key < $1.key }.map {
                .init($0.key, .array([.number(String($0.value.entries)), .number(String($0.value.print)), list($0.value.list)]))
            })),
            .init("removed", .array(removed.map { .array([.string($0.id), list($0.list)]) })),
            .init("kept", .object(kept.sorted { $0.key < $1.key }.map { .init($0.key, .string(Hex.encode($0.value))) })),
        ])
    }

    /// Takes the first line; false when it is not one.
    mutating func read(header: JSONValue) -> Bool {
        guard case .object(let pairs)? = header["states"] else { return false }
        for p in pairs { states[p.key] = p.value.stringValue }
        // Written before the journal: only the states.
        guard case .bool(let w)? = header["whole"] else {
            whole = false
            return true
        }
        whole = w
        func numbers(_ v: JSONValue?) -> [Int]? {
            guard case .array(let items)? = v else { return nil }
            let n = items.compactMap(\.intValue)
            return n.count == items.count ? n : nil
        }
        guard case .object(let rows)? = header["ledger"], case .array(let gone)? = header["removed"],
              case .object(let values)? = header["kept"] else { return false }
        for row in rows {
            guard case .array(let parts) = row.value, parts.count == 3, let entries = parts[0].intValue,
                  let print = parts[1].intValue, let list = numbers(parts[2]) else { return false }
            ledger[row.key] = Ledger(entries: entries, print: Int64(print), list: list)
        }
        for item in gone {
            guard case .array(let parts) = item, parts.count == 2, let id = parts[0].stringValue, let list = numbers(parts[1]) else { return false }
            removed.append((id, list))
        }
        for v in values {
            guard let bytes = v.value.stringValue.flatMap(Hex.decode) else { return false }
            kept[v.key] = bytes
        }
        return true
    }
}

extension SnapshotStore.Snapshot.Commit {
    /// `{"$commit":"HEX","first":N,"count":N,"leaves":"HEX"}`.
    var line: JSONValue {
        .object([.init("$commit", .string(Hex.encode(effects))), .init("first", .number(String(first))),
                 .init("count", .number(String(count))), .init("leaves", .string(Hex.encode(leaves)))])
    }

    /// A commit's line read back; nil when it is not one.
    init?(_ value: JSONValue) {
        guard let effects = value["$commit"]?.stringValue.flatMap(Hex.decode), let first = value["first"]?.intValue,
              let count = value["count"]?.intValue, let leaves = value["leaves"]?.stringValue.flatMap(Hex.decode) else { return nil }
        self.init(effects: effects, first: first, count: count, leaves: leaves)
    }
}
