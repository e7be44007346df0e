#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

extension JSONFileStore {
    /// Rewrites the file with only the live records, the whole ledger and what is
    /// kept, atomically: the leaves in runs of at most 4,096, each record after a
    /// `$ledger` line with its whole list, a `$removed` line per removed message,
    /// the destination states, the hints, and last the counts folded, whose mark is
    /// the last commit's (the file's commits before it need not be read again).
    func compact() throws(MsgError) {
        var w = JSONWriter(capacity: state.records.count * 512 + state.ledger.bytes.count * 2)
        let ledger = state.ledger
        var lines = 0
        func write(_ e: JSONLedger.Entry) {
            JSONLedger.write(e, to: &w)
            lines += 1
        }
        var first = 0
        while first < ledger.count {
            let end = min(first + 4_096, ledger.count)
            write(JSONLedger.Entry(leaves: Array(ledger.leaves(first..<end))))
            first = end
        }
        for m in state.fifo() {
            if let row = ledger.rows[m.id] {
                write(JSONLedger.Entry(leaves: [], id: m.id, entries: row.entries, print: row.print, list: row.list))
            }
            m.write(to: &w)
            w.raw("\n")
            lines += 1
        }
        for (id, list) in ledger.removed {
            JSONLedger.writeRemoved(id, list, to: &w)
            lines += 1
        }
        for (key, value) in state.destinations.sorted(by: { $0.key < $1.key }) {
            CommitLines.writeDestination(key, value, to: &w)
            lines += 1
        }
        for (name, value) in state.kept.sorted(by: { $0.key < $1.key }) {
            write(JSONLedger.Entry(leaves: [], kept: JSONLedger.Kept(name: name, value: value)))
        }
        var fold = state.fold ?? state.recount(now: .now())
        fold.mark = state.seq
        fold.prune(now: .now())
        var bytes: [UInt8] = []
        fold.snapshot(into: &bytes)
        let kept = JSONLedger.Entry(leaves: [], kept: JSONLedger.Kept(name: "fold", value: bytes))
        write(kept)
        try SystemCalls.replaceAtomically(path, with: w.bytes, mode: 0o600, code: .storeIO)
        close(dataFD)
        dataFD = try SystemCalls.open(path, O_RDWR | O_APPEND, code: .storeIO)
        var st = stat()
        fstat(dataFD, &st)
        identity = (UInt64(st.st_dev), UInt64(st.st_ino))
        state.offset = w.bytes.count
        state.lines = lines
        try state.applyWritten([.ledger(kept)])
    }
}
