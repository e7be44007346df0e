import MsgKit

/// The queue as rebuilt from the file's lines, and how far the file was read.
struct StoreState {
    var records: [String: Message] = [:]
    /// Destination states by key (`{"$destination":KEY,"state":TEXT}` lines; a null
    /// state removes one).
    var destinations: [String: String] = [:]
    /// Bytes of the file consumed (always at a line boundary).
    var offset = 0
    /// Lines in the file, live or dead (for the compaction rule).
    var lines = 0
    /// The ledger the file's `$ledger` lines build (``JSONLedger``).
    var ledger = JSONLedger()
    /// What the journal lines add up to (``CommitFold``); nil after a change read
    /// without its journal line (written by hand, or by an older msg): the next
    /// writer counts afresh (``recount(now:)``).
    var fold: CommitFold? = CommitFold()
    /// The number of the last commit read: each journal line is one, and so is each
    /// change read without one. A `fold` kept line sets it to the fold's mark.
    private(set) var seq: Int64 = 0
    /// The floors of the commits after number ``floorsFrom`` (``JournalStore/journalFloors(since:limit:)``), at most 8,192 (4,096 dropped at a time).
    private(set) var floors: [CommitEffects.Floor?] = []
    private(set) var floorsFrom: Int64 = 0
    /// The values kept by name (`hint:KIND`) but the fold.
    private(set) var kept: [String: [UInt8]] = [:]
    /// The commit being read: its rows not yet taken, the number its next change's
    /// leaves start at, and its lines still to come.
    private var open: Open?

    private struct Open {
        var rows: ArraySlice<JSONLedger.JournalRow>
        var leaf: Int
        var lines: Int
    }
    /// A `$ledger` line read whose change has not been read yet, and where it starts
    /// in the bytes being applied.
    private var pending: (entry: JSONLedger.Entry, start: Int)?

    /// The ids of every record in FIFO order, sorted once after a record came, went
    /// or moved, and kept: a change of status (most changes: a claim, an outcome)
    /// keeps its place. Sorting the records themselves after each commit was most
    /// of a flush of 20,000 (2.8 s), and grew with the square of the queue.
    mutating func fifoIDs() -> [String] {
        if let order { return order }
        var keys = records.map { (at: $0.value.createdAt, id: $0.key) }
        keys.sort { $0.at != $1.at ? $0.at < $1.at : $0.id < $1.id }
        let ids = keys.map(\.id)
        order = ids
        return ids
    }

    /// Every record in FIFO order.
    mutating func fifo() -> [Message] {
        fifoIDs().compactMap { records[$0] }
    }

    /// The ids in FIFO order as of the last ``fifoIDs()``; nil after a record came, went or moved.
    private var order: [String]?
    /// The ids of the records in flight (`sending`).
    private(set) var sending: Set<String> = []

    /// A complete line that is not a record: its number in the file and why.
    struct Damage: Error {
        let line: Int
        let reason: String
    }

    /// Applies the complete lines of `bytes`, read at ``offset``, each change with
    /// the `$ledger` line before it, and each commit of several changes whole.
    /// - Returns: how many bytes were consumed: not a last line without newline,
    ///   nor a `$ledger` line whose change is not after it, nor a commit whose lines
    ///   are not all there (each a write cut short, or still to be finished by hand).
    /// - Throws: ``Damage`` for a complete line that is not a record.
    mutating func apply(_ bytes: [UInt8]) throws(Damage) -> Int {
        var start = 0
        var consumed = 0
        let first = lines
        pending = nil  // none is left from a read that met damage
        try bytes.withUnsafeBufferPointer { (all) throws(Damage) in
            while let newline = all[start...].firstIndex(of: 0x0A) {
                let read: Line
                do throws(MsgError) {
                    read = try Self.read(UnsafeBufferPointer(rebasing: all[start..<newline]))
                } catch {
                    throw Damage(line: lines + 1, reason: error.message)
                }
                // A commit of several changes whose lines are not all there is not taken.
                if case .ledger(let e) = read, let n = e.commitLines, !Self.has(n, linesIn: all[start...]) { break }
                lines += 1
                do throws(MsgError) {
                    try applyLine(read, start: start)
                } catch {
                    throw Damage(line: lines, reason: error.message)
                }
                start = newline + 1
                if pending == nil { consumed = start }
            }
        }
        if let p = pending {
            // Read again, with its change, from its own line.
            pending = nil
            lines = first + bytes[..<p.start].filter { $0 == 0x0A }.count
        }
        offset += consumed
        return consumed
    }

    /// Applies what follows ``offset`` when it is whole but for its last newline (a
    /// record, or a `$ledger` line and its change), without moving ``offset`` past
    /// it: the next read sees it again, with whatever follows by then.
    /// - Returns: false when it is not whole (nothing was applied).
    mutating func applyUnterminated(_ tail: [UInt8]) -> Bool {
        guard let lines = Self.wholeLines(tail) else { return false }
        var copy = self
        do throws(MsgError) {
            for line in lines { try line.withUnsafeBufferPointer { (b) throws(MsgError) in try copy.applyLine(b, start: 0) } }
        } catch {
            return false
        }
        guard copy.pending == nil else { return false }
        self = copy
        return true
    }

    /// Whether `bytes` hold `n` complete lines.
    private static func has(_ n: Int, linesIn bytes: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        var found = 0, at = bytes.startIndex
        while found < n, let newline = bytes[at...].firstIndex(of: 0x0A) {
            found += 1
            at = newline + 1
        }
        return found == n
    }

    /// The lines of a tail that lacks only its last newline, when they are whole: one
    /// record, a `$ledger` line and the change it names, or a whole commit of several.
    static func wholeLines(_ tail: [UInt8]) -> [[UInt8]]? {
        let parts = tail.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
        let first = try? parse(parts[0])
        var commit: Int?
        if case .ledger(let e)? = first { commit = e.commitLines }
        guard commit.map({ $0 == parts.count }) ?? (1...2).contains(parts.count) else { return nil }
        guard let last = try? parse(parts[parts.count - 1]) else { return nil }
        if case .ledger = last { return nil }
        if parts.count == 2 && commit == nil {
            guard case .ledger(let e)? = first, let id = e.id, last.changes == id else { return nil }
        }
        return parts
    }

    /// What one line holds: a record, the id of a deletion, a destination's state,
    /// or the ledger's (``JSONLedger``).
    enum Line {
        case record(Message)
        case deleted(String)
        case destination(String, String?)
        case ledger(JSONLedger.Entry)
        case removed(String, [Int])

        /// The message whose record the line changes, if it changes one.
        var changes: String? {
            switch self {
            case .record(let m): return m.id
            case .deleted(let id): return id
            default: return nil
            }
        }
    }

    /// Reads one line (without its newline). - Throws: `corrupt` when it is neither.
    static func parse(_ line: [UInt8]) throws(MsgError) -> Line {
        try line.withUnsafeBufferPointer { (b) throws(MsgError) in try read(b) }
    }

    private static func read(_ line: UnsafeBufferPointer<UInt8>) throws(MsgError) -> Line {
        if let entry = try JSONLedger.entry(line) { return .ledger(entry) }
        let value: JSONValue
        do throws(JSONParser.Failure) { value = try JSONParser.parse(line) } catch { throw MsgError(.corrupt, "invalid JSON: \(error)") }
        if let deleted = value["$deleted"]?.stringValue { return .deleted(deleted) }
        if let leaves = value["$ledger"]?.stringValue { return .ledger(try JSONLedger.entry(value, hex: leaves)) }
        if let id = value["$removed"]?.stringValue { return .removed(id, try JSONLedger.list(value["list"] ?? .null)) }
        if let key = value["$destination"]?.stringValue { return .destination(key, value["state"]?.stringValue) }
        do throws(MsgError) {
            return .record(try Message(json: value))
        } catch {
            // A line that is JSON with an id but not a record (edited by hand) is one
            // damaged record, not a damaged file (Store, requirement 10).
            guard let id = value["id"]?.stringValue, UUIDText.isCanonical(id) else { throw MsgError(.corrupt, error.message) }
            let createdAt = value["created_at"]?.stringValue.flatMap(Timestamp.init(rfc3339:)) ?? Timestamp.now()
            return .record(EncodedMessage.damaged(id: id, to: value["to"]?.stringValue, createdAt: createdAt, text: Array(line),
                                                  error: MsgError(.corrupt, error.message), now: Timestamp.now()).message)
        }
    }


    /// Applies one line that starts at `start` in the bytes being applied. A
    /// `$ledger` line that names a message waits for the next line, its change: the
    /// two are applied together. A change without its `$ledger` line (written by
    /// hand) is applied alone; it is in no leaf.
    private mutating func applyLine(_ line: UnsafeBufferPointer<UInt8>, start: Int) throws(MsgError) {
        try applyLine(try Self.read(line), start: start)
    }

    private mutating func applyLine(_ read: Line, start: Int) throws(MsgError) {
        if let p = pending {
            // Its change, or another line: the entry is taken either way (an entry
            // followed by another line was edited by hand).
            pending = nil
            try ledger.apply(p.entry)
        }
        // Whether the line is one of the commit being read.
        let inCommit = open != nil
        open?.lines -= 1
        defer { if open?.lines == 0 { open = nil } }
        switch read {
        case .deleted(let id):
            order = nil
            sending.remove(id)
            records[id] = nil
            journaled(id, inCommit, removal: true)
        case .destination(let key, let state):
            destinations[key] = state
            if !inCommit { unjournaled() }
        case .record(let m):
            if order != nil && records[m.id]?.createdAt != m.createdAt { order = nil }
            if m.status == .sending { sending.insert(m.id) } else if !sending.isEmpty { sending.remove(m.id) }
            records[m.id] = m
            journaled(m.id, inCommit, removal: false)
        case .ledger(let e):
            if let k = e.kept {
                keep(k)
            } else if let j = e.journal {
                try opened(e, j)
            } else if e.id == nil {
                try ledger.apply(e)
            } else {
                pending = (e, start)
            }
        case .removed(let id, let list): ledger.keepRemoved(id, list)
        }
    }

    /// Applies the lines a commit wrote (``CommitLines/lines``), once they are durable.
    mutating func applyWritten(_ lines: [Line]) throws(MsgError) {
        for line in lines { try applyLine(line, start: 0) }
    }

    // MARK: The journal

    /// A journal line: its leaves go to the ledger, its effects to the counts and
    /// floors, and the changes after it take its rows in order.
    private mutating func opened(_ e: JSONLedger.Entry, _ j: JSONLedger.Journal) throws(MsgError) {
        let first = ledger.count
        try ledger.apply(JSONLedger.Entry(leaves: e.leaves))
        let floor = j.effects.withUnsafeBytes { b in
            if fold?.add(journal: b) == false { fold = nil }
            return CommitEffects.floor(ofJournal: b)
        }
        committed(floor)
        if let n = e.commitLines, n > 1 { open = Open(rows: j.rows[...], leaf: first, lines: n - 1) }
    }

    /// A record stored or removed: its row in the commit being read, or (none) a
    /// change the journal does not hold.
    private mutating func journaled(_ id: String, _ inCommit: Bool, removal: Bool) {
        guard inCommit, let leaf = open?.leaf, let row = open?.rows.popFirst() else {
            unjournaled()
            return
        }
        ledger.took(id, leaf..<(leaf + row.leaves), entries: removal ? nil : row.entries ?? -1, print: row.print)
        open?.leaf += row.leaves
    }

    /// A change without its journal line: the counts are no longer whole, and a
    /// claim scan after it goes back to the start.
    private mutating func unjournaled() {
        fold = nil
        committed(.all)
    }

    private mutating func committed(_ floor: CommitEffects.Floor?) {
        seq += 1
        floors.append(floor)
        if floors.count > 8_192 {
            floors.removeFirst(4_096)
            floorsFrom += 4_096
        }
    }

    /// A kept value; the fold's also says where the journal is: its floors start over.
    private mutating func keep(_ k: JSONLedger.Kept) {
        guard k.name == "fold" else { kept[k.name] = k.value; return }
        fold = k.value.withUnsafeBytes { CommitFold(snapshot: $0) }
        if let fold { seq = fold.mark }
        floors = []
        floorsFrom = seq
    }

    /// The counts of the records as they are, as of the last commit read.
    func recount(now: Timestamp) -> CommitFold {
        var fold = CommitFold()
        fold.mark = seq
        let oldest = CreatedMinute.minute(of: now) - CommitFold.kept
        for m in records.values {
            fold.tally.add(1, to: Tally.records(to: m.to, status: m.status.rawValue))
            fold.tally.attempts(in: m)
            let minute = CreatedMinute.minute(of: m.createdAt)
            if minute >= oldest { fold.created[CreatedMinute(status: m.status.rawValue, minute: minute), default: 0] += 1 }
        }
        return fold
    }
}
