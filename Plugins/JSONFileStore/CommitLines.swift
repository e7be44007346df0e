import MsgKit

/// The lines of one commit: each change of a ``Transaction`` after its `$ledger`
/// line (``JSONLedger``), whose leaves and row facts the recorder chose
/// (``ChangeRecorder``: the store decides none of it), written in one `write`;
/// the destination states after them. A commit of more than one change says on its
/// first line how many lines it has, so that a reader takes it whole or not at all.
struct CommitLines {
    /// The lines, each with its newline.
    private(set) var output = JSONWriter(capacity: 4096)
    private(set) var lineCount = 0
    /// The `$ledger` entries written, in order: the in-memory ledger takes them once
    /// the lines are durable.
    private(set) var entries: [JSONLedger.Entry] = []
    /// The commit's count of lines, for its first line while it is still to be written.
    private var mark: Int?

    /// The lines of `ops`, made against `ledger` as it is and the `stored` records
    /// there are: a store that held messages before its ledger began starts it
    /// with a `began` leaf that counts them.
    /// - Throws: `unavailable` when libcrypto cannot be loaded to hash the leaves.
    init(_ ops: [Transaction.Op], ledger: JSONLedger, stored: Int) throws(MsgError) {
        var inserted: [EncodedMessage] = [], replaced: [EncodedMessage] = []
        for case .record(let r, let old) in ops {
            if old == nil { inserted.append(r) } else { replaced.append(r) }
        }
        // Made beforehand where `queue add` did (on its reading thread), else here on all cores.
        let insertPreps = LedgerPrep.batch(inserted, stored: true), replacePreps = LedgerPrep.batch(replaced, stored: false)
        var recorder = ChangeRecorder()
        var rows: [String: RowLedger?] = [:]
        /// Per op, its leaves in the commit's run and, for a record, its row.
        var made: [(leaves: Range<Int>, row: RowLedger?)] = []
        var nextInsert = 0, nextReplace = 0
        func facts(_ old: Message) -> StoredFacts {
            let row: (entries: Int, print: Int64)?
            if let seen = rows[old.id] { row = seen.map { ($0.entries, $0.contentPrint) } } else { row = ledger.rows[old.id].map { ($0.entries, $0.print) } }
            return StoredFacts(id: old.id, status: old.status.rawValue, recipient: old.to, createdAt: old.createdAt,
                               ledgerEntries: row?.entries ?? -1, contentPrint: row?.print ?? 0)
        }
        for op in ops {
            switch op {
            case .record(let r, let old):
                let m = r.message
                let row: RowLedger
                if let old {
                    row = try recorder.updated(r, m, from: facts(old), prep: replacePreps[nextReplace])
                    nextReplace += 1
                } else {
                    row = try recorder.inserted(r, m, prep: insertPreps[nextInsert])
                    nextInsert += 1
                }
                rows[m.id] = .some(row)
                made.append((row.leaves, row))
            case .deleted(let old):
                made.append((try recorder.removed(facts(old)), nil))
                rows[old.id] = .some(nil)
            case .destination:
                recorder.wroteStates()
                made.append((0..<0, nil))
            }
        }
        let effects = recorder.take()
        // Where each of the commit's leaves starts in its bytes (the recorder's own: whole).
        let starts = [0] + (JSONLedger.ends(of: effects.leaves) ?? [])
        let begins = !ledger.began && stored > 0
        let states = ops.count(where: { if case .destination = $0 { true } else { false } })
        let changes = ops.count - states
        let lines = (begins ? 1 : 0) + 2 * changes + states
        // One change is a pair a reader already takes whole (its `$ledger` line, then
        // the change); more is marked on the first line, a `$ledger` line: one of no
        // leaves before a commit of states alone.
        if lines > 1 && !(lines == 2 && changes == 1) {
            mark = lines
            if !begins && changes == 0 {
                mark = lines + 1
                add(JSONLedger.Entry(leaves: []))
            }
        }
        if begins {
            var began: [UInt8] = []
            try LedgerLeaf.began(stored).write(to: &began)
            add(JSONLedger.Entry(leaves: began))
        }
        // The changes, then the states (which have no leaves: the leaves' order is the ops').
        for (op, (range, row)) in zip(ops, made) {
            let leaves = Array(effects.leaves[starts[range.lowerBound]..<starts[range.upperBound]])
            switch op {
            case .record(let r, _):
                add(JSONLedger.Entry(leaves: leaves, id: r.message.id, entries: row?.entries ?? -1, print: row?.contentPrint ?? 0))
                output.bytes.append(contentsOf: r.json)
                output.raw("\n")
                lineCount += 1
            case .deleted(let old):
                add(JSONLedger.Entry(leaves: leaves, id: old.id, isRemoval: true))
                output.raw("{\"$deleted\":")
                output.string(old.id)
                output.raw("}\n")
                lineCount += 1
            case .destination:
                break
            }
        }
        for case .destination(let key, let state) in ops {
            Self.writeDestination(key, state, to: &output)
            lineCount += 1
        }
    }

    private mutating func add(_ e: JSONLedger.Entry) {
        var e = e
        e.commitLines = mark
        mark = nil
        JSONLedger.write(e, to: &output)
        entries.append(e)
        lineCount += 1
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
