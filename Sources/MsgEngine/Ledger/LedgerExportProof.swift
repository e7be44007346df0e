#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// `msg export --proof KEY` and `msg ledger verify --export` (msg-ledger(1)): beside
/// an export, `FILE.proof` holds a signed checkpoint of the ledger as the export
/// read it; then a line per exported message with the leaves its record as
/// exported stands on (its last `state`, the entries after it: place, kind, number,
/// hash); then one line with the hashes of the subtrees beside them, each once
/// (``LedgerProof/multiproof(size:targets:next:)``). An auditor checks it with the
/// export, the proof and the public key alone: each record hashes to its leaves,
/// and the leaves with those subtrees hash to the signed root.
public enum LedgerExportProof {
    /// One leaf a message stands on.
    struct Stand: Sendable {
        var at: Int
        var kind: LedgerLeaf.Kind
        var n: Int
    }

    /// The leaves the messages `ids` stand on, from their lists, and the size of the
    /// log, all read in the caller's snapshot (``JournalStore/ledgerRead(_:)``).
    static func stands(_ store: any JournalStore, ids: Set<String>) throws(MsgError) -> (size: Int, stands: [String: [Stand]]) {
        let size = try store.ledgerSize()
        var runs = RunCache(store: store)
        var out: [String: [Stand]] = [:]
        try store.ledgerMessages { (record, id, list) throws(MsgError) -> Bool in
            guard record != nil, ids.contains(id) else { return true }
            guard let list, !list.isEmpty else {
                throw MsgError(.badInput, "message \(id) is in no ledger yet (stored before it began, unchanged since): it cannot be proven")
            }
            var mine: [Stand] = []
            for at in list {
                guard let leaf = try runs.leaf(at) else { throw MsgError(.badInput, "ledger: leaf \(at) of message \(id) cannot be read") }
                if leaf.kind == .state { mine = [] }
                mine.append(Stand(at: at, kind: leaf.kind, n: leaf.n))
            }
            out[id] = mine
            return true
        }
        return (size, out)
    }

    /// Writes `FILE.proof` for the messages `ids` (as exported, in order), signed by
    /// `seed`, in the caller's snapshot.
    static func write(_ store: any JournalStore, ids: [String], seed: [UInt8], to path: String) throws(MsgError) {
        let (size, stands) = try Self.stands(store, ids: Set(ids))
        let targets = Array(Set(stands.values.flatMap { $0.map(\.at) })).sorted()
        // The leaves' hashes, run by run, as the tree is walked.
        var runs = RunCache(store: store)
        var i = 0
        let (root, nodes, hashes) = try LedgerProof.multiproof(size: size, targets: targets) { () throws(MsgError) -> Digest in
            defer { i += 1 }
            guard let leaf = try runs.leaf(i) else { throw MsgError(.storeIO, "ledger: leaf \(i) is missing") }
            return leaf.hash
        }
        let checkpoint = try LedgerCheckpoint.sign(size: size, root: root, time: .now(), seed: seed)
        let file = try OutputFile(path, option: "--proof", streams: false, code: .storeIO)
        try file.write(Array((checkpoint.line + "\n").utf8))
        for id in ids {
            guard let mine = stands[id] else { continue }
            var w = JSONWriter()
            w.value(.object([
                .init("id", .string(id)),
                .init("leaves", .array(mine.map { s in
                    .object([
                        .init("at", .number(String(s.at))), .init("kind", .string(s.kind == .state ? "state" : "entry")),
                        .init("n", .number(String(s.n))), .init("hash", .string(hashes[s.at]?.hex ?? "")),
                    ])
                })),
            ]))
            w.raw("\n")
            try file.write(w.bytes)
        }
        var w = JSONWriter()
        w.value(.object([.init("nodes", .array(nodes.map { .array([.number(String($0.lo)), .number(String($0.hi)), .string($0.hash.hex)]) }))]))
        w.raw("\n")
        try file.write(w.bytes)
        try file.commit()
    }

    /// What the check of an export found.
    public struct Report: Sendable {
        public var checkpoint: LedgerCheckpoint
        public var messages = 0
        public var leaves = 0
        public var findings: [LedgerFinding] = []

        /// Whether every record is what the signed ledger held: no finding is an error.
        public var isWhole: Bool { !findings.contains { $0.severity == .error } }
    }

    /// The lines of a file, read as they are needed.
    struct FileLines {
        private var reader: NDJSONReader
        private var batch: [NDJSONReader.Line] = []
        private var at = 0
        private let fd: Int32
        let path: String

        init(_ path: String) throws(MsgError) {
            fd = try SystemCalls.open(path, O_RDONLY | O_CLOEXEC, code: .badInput)
            reader = NDJSONReader(fd: fd, maxLineLength: RecordLimits.maxRecordBytes * 2)
            self.path = path
        }

        func close() { _ = Glibc.close(fd) }

        /// The next line that is not empty, with its number; nil at the end.
        mutating func next() throws(MsgError) -> (number: Int, bytes: [UInt8])? {
            while true {
                if at == batch.count {
                    guard let lines = try reader.nextBatch() else { return nil }
                    batch = lines
                    at = 0
                    continue
                }
                let line = batch[at]
                at += 1
                switch line.bytes {
                case .success(let b): if !b.isEmpty { return (line.number, b) }
                case .failure(let e): throw MsgError(.badInput, "\(path):\(line.number): \(e.message)")
                }
            }
        }
    }

    /// Checks `export` (ndjson, as `msg export` wrote it) against `proof`, whose
    /// checkpoint must be signed by `publicKey` and, when given, be one of
    /// `checkpoints`: the two files are read side by side, a record and its proof
    /// at a time, keeping only the leaves' hashes for the root.
    /// - Returns: what it found; a record that is not what the ledger held, a record
    ///   twice, or a proof that does not go with the export, each a finding.
    /// - Throws: `badInput` for a file that does not read or a checkpoint not signed
    ///   by the key.
    public static func check(export: String, proof: String, checkpoints: [LedgerCheckpoint]?, publicKey: [UInt8]) throws(MsgError) -> Report {
        var proofs = try FileLines(proof)
        defer { proofs.close() }
        var records = try FileLines(export)
        defer { records.close() }
        guard let first = try proofs.next() else { throw MsgError(.badInput, "\(proof) is empty: not a proof of msg export") }
        let checkpoint = try LedgerCheckpoint(line: String(decoding: first.bytes, as: UTF8.self), where: "\(proof):\(first.number)")
        guard try checkpoint.isSigned(by: publicKey) else {
            throw MsgError(.badInput, "\(proof):1: the checkpoint's signature is not the public key's: it is forged or was changed")
        }
        if let checkpoints, !checkpoints.contains(where: { $0.size == checkpoint.size && $0.root == checkpoint.root }) {
            throw MsgError(.badInput, "\(proof):1: the proof's checkpoint (size \(checkpoint.size), root \(checkpoint.root.hex)) is none of the checkpoints given")
        }
        func parse(_ line: (number: Int, bytes: [UInt8])) throws(MsgError) -> JSONValue {
            do throws(JSONParser.Failure) { return try JSONParser.parse(line.bytes) } catch { throw MsgError(.badInput, "\(proof):\(line.number): \(error)") }
        }
        var hashes: [Int: Digest] = [:]
        var report = Report(checkpoint: checkpoint)
        var seen = Set<String>()
        /// The export and its proof no longer go together: nothing after can be read against it.
        func mismatch(_ text: String) -> Report {
            report.findings.append(LedgerFinding(.exportProofMismatch, text))
            return report
        }
        while let line = try records.next() {
            let place = "\(export):\(line.number)"
            let m = try line.bytes.withUnsafeBufferPointer { (b) throws(MsgError) in try Message(decoding: b, origin: .input) }
            guard let p = try proofs.next() else { return mismatch("\(place): message \(m.id) has no proof in \(proof)") }
            let v = try parse(p)
            if v["nodes"] != nil { return mismatch("\(place): message \(m.id) has no proof in \(proof)") }
            guard case .string(let id)? = v["id"], case .array(let items)? = v["leaves"] else {
                return mismatch("\(proof):\(p.number): not a message's proof")
            }
            guard id == m.id else {
                return mismatch("\(proof):\(p.number): message \(id) is proven but not in \(export) where it would be (line \(line.number) is message \(m.id)): "
                    + "it was taken out of the export, or the export changed")
            }
            if !seen.insert(id).inserted {
                report.findings.append(LedgerFinding(.exportDuplicate, message: id,
                                                     "\(place): message \(id) is in the export twice: it would be counted twice"))
                continue
            }
            var leaves: [LedgerReplay.Leaf] = []
            for item in items {
                guard case .number(let atText)? = item["at"], let at = Int(atText), case .string(let kind)? = item["kind"],
                      case .number(let nText)? = item["n"], let n = Int(nText), let hash = item["hash"]?.stringValue.flatMap(Digest.init(hex:)) else {
                    return mismatch("\(proof):\(p.number): a leaf of message \(id) is not one")
                }
                if let seen = hashes[at], seen != hash { return mismatch("\(proof):\(p.number): leaf \(at) is given two hashes") }
                hashes[at] = hash
                leaves.append(LedgerReplay.Leaf(at: at, kind: kind == "state" ? .state : .entry, n: n, hash: hash))
            }
            guard let state = leaves.first, state.kind == .state else {
                report.findings.append(LedgerFinding(.stateMissing, message: m.id, "\(place): message \(m.id): its proof does not begin with its state"))
                continue
            }
            let appended = Array(leaves.dropFirst())
            if let k = appended.indices.first(where: { appended[$0].kind != .entry || appended[$0].n != state.n + $0 }) {
                report.findings.append(LedgerFinding(.entryOutOfOrder, leaf: appended[k].at, message: m.id,
                                                     "\(place): message \(m.id): its proof's leaf \(appended[k].at) is not history entry \(state.n + k)"))
                continue
            }
            // An export's proof names the state a record stands on, not the leaves
            // before it: whether that state was written after the message was
            // delivered is the store's check to make (msg-ledger(1)).
            let found = try LedgerReplay.replay(EncodedMessage(m), m, state: state, appended: appended, before: nil)
            report.findings += found.map { f in LedgerFinding(f.id, severity: f.severity, leaf: f.leaf, message: f.message, "\(place): \(f.text)") }
            if !found.contains(where: { $0.severity == .error }) {
                report.leaves += leaves.count
                report.messages += 1
            }
        }
        var nodesLine: (number: Int, value: JSONValue)?
        if let p = try proofs.next() {
            let v = try parse(p)
            if v["nodes"] == nil {
                let id = v["id"]?.stringValue ?? "?"
                return mismatch("\(proof):\(p.number): message \(id) is proven but not in \(export): it was taken out of the export")
            }
            nodesLine = (p.number, v)
        }
        guard let (number, value) = nodesLine, case .array(let items)? = value["nodes"] else {
            return mismatch("\(proof): the subtrees are missing: the proof was cut")
        }
        if let extra = try proofs.next() { return mismatch("\(proof):\(extra.number): a line after the subtrees") }
        var nodes: [LedgerProof.Node] = []
        for item in items {
            guard case .array(let v) = item, v.count == 3, case .number(let lo) = v[0], case .number(let hi) = v[1],
                  let l = Int(lo), let h = Int(hi), let hash = v[2].stringValue.flatMap(Digest.init(hex:)) else {
                return mismatch("\(proof):\(number): a subtree is not one")
            }
            nodes.append(LedgerProof.Node(lo: l, hi: h, hash: hash))
        }
        // Every record is its leaves: now the leaves must be the signed tree's.
        if try LedgerProof.root(size: checkpoint.size, leaves: hashes, nodes: nodes) != checkpoint.root {
            report.findings.append(LedgerFinding(.proofRootWrong, "\(proof): its leaves and subtrees do not hash to the checkpoint's root: the proof was changed"))
        }
        return report
    }
}
