#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

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
