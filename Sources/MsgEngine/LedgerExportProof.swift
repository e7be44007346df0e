import MsgKit
import MsgSupport

/// `msg export --proof KEY` and `msg ledger verify --export` (msg-ledger(1)): beside
/// an export, `FILE.proof` holds a signed checkpoint of the ledger as the export
/// read it, then a line per exported message with the inclusion proof (RFC 6962)
/// of each leaf its record as exported stands on (its last `state`, the entries
/// after it). An auditor checks it with the export, the proof and the public key
/// alone: each record hashes to its leaves, each leaf is in the signed tree.
public enum LedgerExportProof {
    /// The leaves of the messages `ids` the proof stands on, from their lists; and
    /// the size of the log, all read in the caller's snapshot (``LedgerStore/ledgerRead(_:)``).
    static func leaves(_ store: any LedgerStore, ids: Set<String>) throws(MsgError) -> (size: Int, leaves: [String: [(at: Int, leaf: LedgerLeaf)]]) {
        let size = try store.ledgerSize()
        var runs = RunCache(store: store)
        var out: [String: [(at: Int, leaf: LedgerLeaf)]] = [:]
        try store.ledgerMessages { (record, id, list) throws(MsgError) -> Bool in
            guard record != nil, ids.contains(id) else { return true }
            guard let list, !list.isEmpty else {
                throw MsgError(.badInput, "message \(id) is in no ledger yet (stored before it began, unchanged since): it cannot be proven")
            }
            var mine: [(at: Int, leaf: LedgerLeaf)] = []
            for at in list {
                guard let leaf = try runs.leaf(at) else { throw MsgError(.badInput, "ledger: leaf \(at) of message \(id) cannot be read") }
                if leaf.kind == .state { mine = [] }
                mine.append((at, leaf))
            }
            out[id] = mine
            return true
        }
        return (size, out)
    }

    /// Writes `FILE.proof` for the messages `ids` (as exported, in order), signed by
    /// `seed`, in the caller's snapshot.
    static func write(_ store: any LedgerStore, ids: [String], seed: [UInt8], to path: String) throws(MsgError) {
        let (size, leaves) = try Self.leaves(store, ids: Set(ids))
        // The leaves' hashes, run by run, as the tree is walked.
        var run: (first: Int, leaves: [LedgerLeaf]) = (0, [])
        var i = 0
        let (root, paths) = try LedgerProof.paths(size: size, targets: leaves.values.flatMap { $0.map(\.at) }) { () throws(MsgError) -> Digest in
            defer { i += 1 }
            if i >= run.first + run.leaves.count {
                guard let (first, bytes) = try store.ledgerRun(holding: i) else { throw MsgError(.storeIO, "ledger: leaf \(i) is missing") }
                var parsed: [LedgerLeaf] = []
                bytes.withUnsafeBytes { b in
                    var at = 0
                    while let (leaf, end) = LedgerLeaf.read(b, at: at) {
                        parsed.append(leaf)
                        at = end
                    }
                }
                run = (first, parsed)
                guard i - first < parsed.count else { throw MsgError(.badInput, "ledger: leaf \(i) cannot be read") }
            }
            return run.leaves[i - run.first].hash
        }
        let checkpoint = try LedgerCheckpoint.sign(size: size, root: root, time: .now(), seed: seed)
        var text = checkpoint.line + "\n"
        for id in ids {
            guard let mine = leaves[id] else { continue }
            var w = JSONWriter()
            w.value(.object([
                .init("id", .string(id)),
                .init("leaves", .array(mine.map { (at, leaf) in
                    .object([
                        .init("at", .number(String(at))), .init("kind", .string(leaf.kind == .state ? "state" : "entry")),
                        .init("n", .number(String(leaf.n))), .init("path", .array((paths[at] ?? []).map { .string($0.hex) })),
                    ])
                })),
            ]))
            text += String(decoding: w.bytes, as: UTF8.self) + "\n"
        }
        try SystemCalls.replaceAtomically(path, with: Array(text.utf8), mode: 0o600, code: .storeIO)
    }

    /// What the check of an export found.
    public struct Report: Sendable {
        public var checkpoint: LedgerCheckpoint
        public var messages = 0
        public var leaves = 0
    }

    /// Checks `export` (ndjson, as `msg export` wrote it) against `proof`, whose
    /// checkpoint must be signed by `publicKey` and, when given, be one of `checkpoints`.
    /// - Throws: `badInput` naming the first record or proof line that does not hold.
    public static func check(export: String, proof: String, checkpoints: [LedgerCheckpoint]?, publicKey: [UInt8]) throws(MsgError) -> Report {
        let proofLines = String(decoding: try SystemCalls.readFile(proof, code: .badInput, what: "proof"), as: UTF8.self)
            .split(separator: "\n").map(String.init)
        guard let first = proofLines.first else { throw MsgError(.badInput, "\(proof) is empty: not a proof of msg export") }
        let checkpoint = try LedgerCheckpoint(line: first, where: "\(proof):1")
        guard try checkpoint.isSigned(by: publicKey) else {
            throw MsgError(.badInput, "\(proof):1: the checkpoint's signature is not the public key's: it is forged or was changed")
        }
        if let checkpoints, !checkpoints.contains(where: { $0.size == checkpoint.size && $0.root == checkpoint.root }) {
            throw MsgError(.badInput, "\(proof):1: the proof's checkpoint (size \(checkpoint.size), root \(checkpoint.root.hex)) is none of the checkpoints given")
        }
        var proven: [String: (line: Int, leaves: [(at: Int, kind: String, n: Int, path: [Digest])])] = [:]
        for (i, line) in proofLines.enumerated().dropFirst() {
            let place = "\(proof):\(i + 1)"
            let v: JSONValue
            do throws(JSONParser.Failure) { v = try JSONParser.parse(line) } catch { throw MsgError(.badInput, "\(place): \(error)") }
            guard case .string(let id)? = v["id"], case .array(let items)? = v["leaves"] else { throw MsgError(.badInput, "\(place): not a message's proof") }
            var leaves: [(at: Int, kind: String, n: Int, path: [Digest])] = []
            for item in items {
                guard case .number(let atText)? = item["at"], let at = Int(atText), case .string(let kind)? = item["kind"],
                      case .number(let nText)? = item["n"], let n = Int(nText), case .array(let hexes)? = item["path"] else {
                    throw MsgError(.badInput, "\(place): a leaf of message \(id) is not one")
                }
                let path = hexes.compactMap { $0.stringValue.flatMap(Digest.init(hex:)) }
                guard path.count == hexes.count else { throw MsgError(.badInput, "\(place): a path of message \(id) is not hashes") }
                leaves.append((at, kind, n, path))
            }
            proven[id] = (i + 1, leaves)
        }
        var report = Report(checkpoint: checkpoint)
        let bytes = try SystemCalls.readFile(export, code: .badInput, what: "export")
        var number = 0
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            number += 1
            let place = "\(export):\(number)"
            let m = try Array(line).withUnsafeBufferPointer { (b) throws(MsgError) in try Message(decoding: b, origin: .input) }
            let r = EncodedMessage(m)
            guard let mine = proven.removeValue(forKey: m.id) else { throw MsgError(.badInput, "\(place): message \(m.id) has no proof in \(proof)") }
            guard let state = mine.leaves.first, state.kind == "state", state.n <= m.history.count else {
                throw MsgError(.badInput, "\(place): message \(m.id): its proof does not begin with its state")
            }
            var next = state.n
            for (k, leaf) in mine.leaves.enumerated() {
                let hash: Digest
                if k == 0 {
                    hash = try LedgerLeaf.stateHash(r, m, entries: leaf.n)
                } else {
                    guard leaf.kind == "entry", leaf.n == next, leaf.n < m.history.count else {
                        throw MsgError(.badInput, "\(place): message \(m.id): its proof's leaf \(leaf.at) is not history entry \(next)")
                    }
                    hash = try LedgerLeaf.entryHash(m.id, leaf.n, m.history[leaf.n])
                    next += 1
                }
                guard try LedgerProof.proves(leaf.path, leaf: hash, at: leaf.at, size: checkpoint.size, root: checkpoint.root) else {
                    throw MsgError(.badInput, "\(place): message \(m.id) is not what the ledger held at leaf \(leaf.at) (\(leaf.kind) \(leaf.n)): "
                        + "the record was changed, or its proof")
                }
                report.leaves += 1
            }
            guard next == m.history.count else {
                throw MsgError(.badInput, "\(place): message \(m.id) has \(m.history.count) history entries and its proof \(next): an entry was added")
            }
            report.messages += 1
        }
        if let (id, left) = proven.min(by: { $0.value.line < $1.value.line }) {
            throw MsgError(.badInput, "\(proof):\(left.line): message \(id) is proven but not in \(export): it was taken out of the export")
        }
        return report
    }
}
