import MsgKit

/// The lines of one commit, written in one `write`: its journal line (``JSONLedger``),
/// whose leaves, effects and row facts the recorder chose (``ChangeRecorder``: the
/// store decides none of it), then each change of a ``Transaction``, then the
/// destination states. The journal line counts the commit's lines, so that a reader
/// takes it whole or not at all.
struct CommitLines {
    /// The lines, each with its newline.
    private(set) var output = JSONWriter(capacity: 4096)
    /// The lines as read back (``StoreState/Line``): the in-memory state takes them
    /// once they are durable, as a reader of the file would.
    private(set) var lines: [StoreState.Line] = []

    /// The lines of `ops`, made against `ledger` as it is and the `stored` records
    /// there are. Before the commit: the counts made afresh when the store has none
    /// whole (`recount`, ``StoreState/recount(now:)``), and a `began` leaf that counts
    /// the records of a store that held them before its ledger began.
    /// - Throws: `unavailable` when libcrypto cannot be loaded to hash the leaves.
    init(_ ops: [Transaction.Op], ledger: JSONLedger, stored: Int, recount: CommitFold?) throws(MsgError) {
        if let recount {
            var bytes: [UInt8] = []
            recount.snapshot(into: &bytes)
            add(JSONLedger.Entry(leaves: [], kept: JSONLedger.Kept(name: "fold", value: bytes)))
        }
        if !ledger.began && stored > 0 {
            var began: [UInt8] = []
            try LedgerLeaf.began(stored).write(to: &began)
            add(JSONLedger.Entry(leaves: began))
        }
        if ops.isEmpty { return }
        var inserted: [EncodedMessage] = [], replaced: [EncodedMessage] = []
        for case .record(let r, let old) in ops {
            if old == nil { inserted.append(r) } else { replaced.append(r) }
        }
        // Made beforehand where `queue add` did (on its reading thread), else here on all cores.
        let insertPreps = LedgerPrep.batch(inserted, stored: true), replacePreps = LedgerPrep.batch(replaced, stored: false)
        var recorder = ChangeRecorder()
        /// The facts of the records this commit changed so far.
        var changed: [String: RowLedger?] = [:]
        var rows: [JSONLedger.JournalRow] = []
        var nextInsert = 0, nextReplace = 0
        func facts(_ old: Message) -> StoredFacts {
            let row: (entries: Int, print: Int64)?
            if let seen = changed[old.id] { row = seen.map { ($0.entries, $0.contentPrint) } } else { row = ledger.rows[old.id].map { ($0.entries, $0.print) } }
            return StoredFacts(id: old.id, status: old.status.rawValue, recipient: old.to, createdAt: old.createdAt,
                               ledgerEntries: row?.entries ?? -1, contentPrint: row?.print ?? 0)
        }
        for op in ops {
            switch op {
            case .record(let r, let old):
                let row: RowLedger
                if let old {
                    row = try recorder.updated(r, r.message, from: facts(old), prep: replacePreps[nextReplace])
                    nextReplace += 1
                } else {
                    row = try recorder.inserted(r, r.message, prep: insertPreps[nextInsert])
                    nextInsert += 1
                }
                changed[r.id] = .some(row)
                rows.append(JSONLedger.JournalRow(leaves: row.leaves.count, entries: row.entries, print: row.contentPrint))
            case .deleted(let old):
                rows.append(JSONLedger.JournalRow(leaves: try recorder.removed(facts(old)).count))
                changed[old.id] = .some(nil)
            case .destination:
                recorder.wroteStates()
            }
        }
        let effects = recorder.take()
        var bytes: [UInt8] = []
        effects.journalBytes(into: &bytes)
        add(JSONLedger.Entry(leaves: effects.leaves, commitLines: 1 + ops.count, journal: JSONLedger.Journal(effects: bytes, rows: rows)))
        // The changes, then the states (which have no leaves: the leaves' order is the ops').
        for op in ops {
            switch op {
            case .record(let r, _):
                output.bytes.append(contentsOf: r.json)
                output.raw("\n")
                lines.append(.record(r.message))
            case .deleted(let old):
                output.raw("{\"$deleted\":")
                output.string(old.id)
                output.raw("}\n")
                lines.append(.deleted(old.id))
            case .destination:
                break
            }
        }
        for case .destination(let key, let state) in ops {
            Self.writeDestination(key, state, to: &output)
            lines.append(.destination(key, state))
        }
    }

    private mutating func add(_ e: JSONLedger.Entry) {
        JSONLedger.write(e, to: &output)
        lines.append(.ledger(e))
    }

    /// Writes a `$destination` line.
    static func writeDestination(_ key: String, _ state: String?, to w: inout JSONWriter) {
        w.raw("{\"$destination\":")
        w.string(key)
        w.raw(",\"state\":")
        if let state { w.string(state) } else { w.raw("null") }
        w.raw("}\n")
    }
}
