#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// Counts, floors and the ledger, each read from the journal lines (``StoreState``,
/// ``JSONLedger``), as the file's lines left them in memory.
extension JSONFileStore: StoreCounting, ChangeFloors {
    /// The fold, with the records not yet due and in flight by recipient and the
    /// oldest due one, read from the records in memory; nil when the counts are not
    /// whole (a change written by hand or by an older msg, until the next write).
    public func counts(now: Timestamp, excluding excluded: Set<String>) throws(MsgError) -> StoreCounts? {
        try read()
        guard let fold = state.fold else { return nil }
        var notYetDue: [String: Int] = [:], inFlight: [String: Int] = [:]
        var oldest: Timestamp?
        for m in state.records.values {
            switch m.status {
            case .queued, .failed:
                if let due = m.dueAt, due > now {
                    notYetDue[m.to, default: 0] += 1
                } else if !excluded.contains(m.to), oldest.map({ m.createdAt < $0 }) ?? true {
                    oldest = m.createdAt
                }
            case .sending: inFlight[m.to, default: 0] += 1
            default: break
            }
        }
        return StoreCounts(tally: fold.tally, notYetDue: notYetDue, inFlight: inFlight, oldestDue: oldest)
    }

    public func created(after times: [Timestamp]) throws(MsgError) -> [String: [Int]]? {
        try read()
        guard let fold = state.fold else { return nil }
        return fold.created(after: times, now: .now()) { t in
            let end = Timestamp(milliseconds: (CreatedMinute.minute(of: t) + 1) * 60_000)
            var out: [String: Int] = [:]
            for m in state.records.values where m.createdAt > t && m.createdAt < end { out[m.status.rawValue, default: 0] += 1 }
            return out
        }
    }

    /// The mark is the number of the last commit read; a mark from before the
    /// floors kept (a compaction since, or one older than the last 4,096 to 8,192 commits) gets `all`.
    public func changeFloor(since mark: Int64?) throws(MsgError) -> ChangeFloor {
        try read()
        let newest = state.seq
        guard let mark, mark >= state.floorsFrom, mark <= newest else { return ChangeFloor(mark: newest, floor: .all) }
        return CommitFold.floor(since: mark, newest: newest, state.floors[Int(mark - state.floorsFrom)...])
    }

    public func scanHint(_ kind: String) throws(MsgError) -> String? {
        try read()
        return state.kept["hint:" + kind].map { String(decoding: $0, as: UTF8.self) }
    }

    /// A line of its own, not a commit: no journal line, and not synced (a hint may be lost).
    public func saveScanHint(_ kind: String, _ hint: String) throws(MsgError) {
        try writable()
        try lock(LOCK_EX)
        defer { flock(lockFD, LOCK_UN) }
        try refresh(writer: true)
        let kept = JSONLedger.Entry(leaves: [], kept: JSONLedger.Kept(name: "hint:" + kind, value: Array(hint.utf8)))
        var w = JSONWriter()
        JSONLedger.write(kept, to: &w)
        try append(w.bytes, sync: false)
        try state.applyWritten([.ledger(kept)])
        state.lines += 1
    }
}

extension JSONFileStore: LedgerStore {
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

    public func ledgerRun(holding index: Int) throws(MsgError) -> (first: Int, bytes: [UInt8])? {
        let ledger = try ledger()
        guard index >= 0, index < ledger.count else { return nil }
        let first = index / Self.runLength * Self.runLength
        return (first, Array(ledger.leaves(first..<min(first + Self.runLength, ledger.count))))
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
