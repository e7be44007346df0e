#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// The commit journal as the file's lines left it in memory (``StoreState``,
/// ``JSONLedger``), from which MsgKit makes the counts, floors, hints and ledger
/// (``JournalStore``).
extension JSONFileStore: JournalStore {
    /// Nil when the counts are not whole (a change written by hand or by an older
    /// msg, until the next write).
    public func journalFold<R>(_ body: (CommitFold?) throws(MsgError) -> R) throws(MsgError) -> R {
        try read()
        return try body(state.fold)
    }

    /// From the records in memory.
    public func openCounts(now: Timestamp, excluding excluded: Set<String>) throws(MsgError) -> OpenCounts {
        try read()
        var open = OpenCounts()
        for m in state.records.values { open.add(m, now: now, excluding: excluded) }
        return open
    }

    public func createdCounts(after start: Timestamp, before end: Timestamp) throws(MsgError) -> [String: Int] {
        try read()
        var out: [String: Int] = [:]
        for m in state.records.values where m.createdAt > start && m.createdAt < end { out[m.status.rawValue, default: 0] += 1 }
        return out
    }

    /// The mark is the number of the last commit read; a mark from before the
    /// floors kept (a compaction since, or one older than the last 4,096 to 8,192
    /// commits) gets nil: anything may have changed.
    public func journalFloors(since mark: Int64?, limit: Int) throws(MsgError) -> (mark: Int64, floors: [CommitEffects.Floor?]?) {
        try read()
        let newest = state.seq
        guard let mark, mark >= state.floorsFrom, mark <= newest, newest - mark <= Int64(limit) else { return (newest, nil) }
        return (newest, Array(state.floors[Int(mark - state.floorsFrom)...]))
    }

    public func kept(_ name: String) throws(MsgError) -> [UInt8]? {
        try read()
        return state.kept[name]
    }

    /// A line of its own, not a commit: no journal line, and not synced (a value may be lost).
    public func keep(_ name: String, _ value: [UInt8]) throws(MsgError) {
        try writable()
        try lock(LOCK_EX)
        defer { flock(lockFD, LOCK_UN) }
        try refresh(writer: true)
        let kept = JSONLedger.Entry(leaves: [], kept: JSONLedger.Kept(name: name, value: value))
        var w = JSONWriter()
        JSONLedger.write(kept, to: &w)
        try append(w.bytes, sync: false)
        try state.applyWritten([.ledger(kept)])
        state.lines += 1
    }

    /// Under the shared lock, on the state read once: every call in `body` reads it.
    public func ledgerRead<R>(_ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        if inSnapshot { return try body() }
        try lock(LOCK_SH)
        defer { flock(lockFD, LOCK_UN) }
        try refresh(writer: false)
        inSnapshot = true
        defer { inSnapshot = false }
        return try body()
    }

    public func ledgerSize() throws(MsgError) -> Int {
        try ledger().count
    }

    /// The ledger, read. - Throws: `storeIO` when the store holds messages from
    /// before its ledger began and no command wrote since.
    private func ledger() throws(MsgError) -> JSONLedger {
        try read()
        guard state.ledger.began || state.records.isEmpty else {
            throw MsgError(.storeIO, "store \(path) holds \(state.records.count) messages from before its ledger began; a command that writes, such as msg recover, begins it")
        }
        return state.ledger
    }

    /// Runs of at most ``runLength`` leaves, numbered from a multiple of it.
    public func ledgerRuns(from: Int, _ body: (Int, UnsafeRawBufferPointer) throws(MsgError) -> Bool) throws(MsgError) {
        let ledger = try ledger()
        var first = max(0, from) / Self.runLength * Self.runLength
        while first < ledger.count {
            let end = min(first + Self.runLength, ledger.count)
            let run = Array(ledger.leaves(first..<end))
            var more = true
            try run.withUnsafeBufferPointer { (b) throws(MsgError) in more = try body(first, UnsafeRawBufferPointer(b)) }
            if !more { return }
            first = end
        }
    }

    /// The stored messages in FIFO order, then the removed ones as they were removed.
    public func ledgerMessages(_ body: (EncodedMessage?, String, [Int]?) throws(MsgError) -> Bool) throws(MsgError) {
        let ledger = try ledger()
        for m in state.fifo() {
            if try !body(EncodedMessage(m), m.id, ledger.rows[m.id]?.list) { return }
        }
        for (id, list) in ledger.removed {
            if try !body(nil, id, list) { return }
        }
    }

    /// The leaves a run of ``ledgerRuns(from:_:)`` holds at most.
    static let runLength = 4_096
}
