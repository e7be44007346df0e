import MsgKit
import MsgSupport

/// `msg ledger` (msg-ledger(1), docs/DESIGN.md 10): the root of a store's ledger,
/// and its check against the records and against signed checkpoints.
///
/// The check reads in one snapshot of the store (``JournalStore/ledgerRead(_:)``):
/// 1. each message and each removed one, with its leaves looked up by number: the
///    leaves must be its own, their replay (a `state`, then entries appended in
///    order) must give its history's length, and the digests of its content and
///    of each entry, computed from the record as it is now, must be the leaves';
/// 2. then the log in order: every leaf named by exactly one message (none: a
///    message or a change deleted behind msg's back), the tree's root at each
///    checkpoint's size the checkpoint's root.
/// Memory: two bits a leaf and the runs of leaves last looked up, not the log.
public final class LedgerAudit {
    private let store: any JournalStore

    public init(store: any JournalStore) {
        self.store = store
    }

    /// What a check found.
    public struct Report: Sendable {
        public var size = 0
        public var root: Digest?
        public var messages = 0
        public var removed = 0
        /// Messages stored before the ledger began, not changed since (not covered).
        public var beforeLedger = 0
        public var checkpoints = 0
        /// What it found, in the order of the leaves they are about (the first first).
        public var findings: [LedgerFinding] = []

        /// Whether the store is what its ledger holds: no finding is an error.
        public var isWhole: Bool { !findings.contains { $0.severity == .error } }

        mutating func add(_ id: LedgerFinding.ID, leaf: Int, message: String? = nil, _ text: String) {
            findings.append(LedgerFinding(id, leaf: leaf, message: message, text))
        }

        /// The line printed when it is whole.
        public var line: String {
            var w = JSONWriter()
            w.value(.object([
                .init("size", .number(String(size))), .init("root", .string(root?.hex ?? "")),
                .init("messages", .number(String(messages))), .init("removed", .number(String(removed))),
                .init("before_ledger", .number(String(beforeLedger))), .init("checkpoints", .number(String(checkpoints))),
            ]))
            return String(decoding: w.bytes, as: UTF8.self)
        }
    }

    /// The size and root of the log as it is.
    public func root() throws(MsgError) -> (size: Int, root: Digest) {
        try store.ledgerRead { () throws(MsgError) -> (size: Int, root: Digest) in
            let size = try store.ledgerSize()
            var tree = LedgerTree()
            try leaves(upTo: size) { (_, leaf) throws(MsgError) in try tree.append(leaf.hash) }
            return (size, try tree.root())
        }
    }

    /// Checks the ledger against the records and against `checkpoints` (whose
    /// signatures the caller checked).
    public func verify(checkpoints: [LedgerCheckpoint] = [], progress: Progress? = nil) throws(MsgError) -> Report {
        try store.ledgerRead { () throws(MsgError) -> Report in
            var report = Report()
            let size = try store.ledgerSize()
            report.size = size
            var named = Bits(count: size)
            var runs = RunCache(store: store)
            var unledgered: [String] = []
            var seen = 0
            try store.ledgerMessages { (record, id, list) throws(MsgError) -> Bool in
                seen += 1
                if seen % 4096 == 0 { progress?.update(seen) }
                if record != nil { report.messages += 1 } else { report.removed += 1 }
                guard let list else {
                    report.beforeLedger += 1
                    if unledgered.count < 10 { unledgered.append(id) }
                    return true
                }
                try check(record, id: id, list: list, size: size, named: &named, runs: &runs, into: &report)
                return true
            }
            var tree = LedgerTree()
            var allowed = 0
            let sizes = Set(checkpoints.map(\.size))
            var roots: [Int: Digest] = [:]
            if sizes.contains(0) { roots[0] = try tree.root() }
            try leaves(upTo: size) { (i, leaf) throws(MsgError) in
                try tree.append(leaf.hash)
                if !leaf.isKnownFormat {
                    report.add(.leafFormatUnknown, leaf: i, "leaf \(i) is in ledger format \(leaf.version), which this msg (format \(LedgerLeaf.formatVersion)) cannot check: a store built for a newer msg wrote it; upgrade msg")
                } else if let expected = try leaf.expectedHash(), expected != leaf.hash {
                    report.add(.leafChanged, leaf: i, "leaf \(i) (\(Self.describe(leaf))) was changed outside msg: its hash is not its own")
                } else if leaf.kind == .began {
                    allowed += leaf.n
                } else if !named[i] {
                    report.add(.leafOrphaned, leaf: i, message: leaf.id.isEmpty ? nil : leaf.id,
                               "leaf \(i) (\(Self.describe(leaf))) belongs to no message in the store: "
                                   + (leaf.id.isEmpty ? "that change was deleted outside msg" : "message \(leaf.id) was deleted outside msg"))
                }
                if sizes.contains(tree.size) { roots[tree.size] = try tree.root() }
            }
            report.root = try tree.root()
            for c in checkpoints {
                report.checkpoints += 1
                guard c.size <= size else {
                    report.add(.logShorter, leaf: size, "the checkpoint of \(c.time) has \(c.size) leaves and the ledger only \(size): leaves were removed")
                    continue
                }
                if roots[c.size] != c.root {
                    report.add(.logRewritten, leaf: c.size, "the ledger's first \(c.size) leaves do not hash to the root of the checkpoint of \(c.time): "
                        + "the log was changed before it")
                }
            }
            if report.beforeLedger > allowed {
                report.add(.messageUnledgered, leaf: Int.max, "\(report.beforeLedger) messages are in no ledger, but \(allowed) were stored before it began: "
                    + "messages were added outside msg (\(unledgered.joined(separator: ", "))…)")
            }
            report.findings.sort { ($0.severity, $0.leaf ?? Int.max) < ($1.severity, $1.leaf ?? Int.max) }
            return report
        }
    }

    /// Checks one message (`record` nil: removed) against its leaves: the list's
    /// shape here, the record against its last state and what follows it in
    /// ``LedgerReplay``.
    private func check(_ record: EncodedMessage?, id: String, list: [Int], size: Int, named: inout Bits, runs: inout RunCache,
                       into report: inout Report) throws(MsgError) {
        var count: Int?
        var state: LedgerReplay.Leaf?
        /// The entries the ledger held before the last state; nil: it is the first leaf.
        var before: Int?
        var appended: [LedgerReplay.Leaf] = []
        var removedAt: Int?
        for at in list {
            guard at < size else {
                return report.add(.listWrong, leaf: at, message: id, "message \(id) names leaf \(at), past the ledger's end (\(size))")
            }
            if named[at] { return report.add(.listWrong, leaf: at, message: id, "leaf \(at) is named by message \(id) and by another") }
            named[at] = true
            guard let leaf = try runs.leaf(at) else { return report.add(.leafUnreadable, leaf: at, message: id, "leaf \(at) cannot be read") }
            // Named once, for the whole log, where the leaves are read in order; the
            // message is not replayed, its leaves are still its own.
            guard leaf.isKnownFormat else {
                for other in list where other < size { named[other] = true }
                return
            }
            guard leaf.kind == .entry || leaf.id == id else {
                return report.add(.listWrong, leaf: at, message: id, "message \(id) names leaf \(at), which is message \(leaf.id)'s")
            }
            guard removedAt == nil else { return report.add(.removalWrong, leaf: at, message: id, "message \(id) has leaf \(at) after its removal") }
            let replayed = LedgerReplay.Leaf(at: at, kind: leaf.kind, n: leaf.n, hash: leaf.hash)
            switch leaf.kind {
            case .state:
                before = count
                count = leaf.n
                state = replayed
                appended = []
            case .entry:
                guard let c = count, c == leaf.n else {
                    return report.add(.entryOutOfOrder, leaf: at, message: id,
                                      "message \(id): leaf \(at) appends history entry \(leaf.n) where the ledger has \(count.map { "\($0) entries" } ?? "no state")")
                }
                count = c + 1
                appended.append(replayed)
            case .removed:
                if try leaf.expectedHash() != leaf.hash {
                    return report.add(.leafChanged, leaf: at, message: id, "leaf \(at) (the removal of message \(id)) was changed outside msg")
                }
                removedAt = at
            case .began:
                return report.add(.listWrong, leaf: at, message: id, "message \(id) names leaf \(at), the ledger's beginning")
            }
        }
        guard let record else {
            if removedAt == nil { report.add(.removalWrong, leaf: list.last ?? Int.max, message: id, "removed message \(id) has no leaf of its removal") }
            return
        }
        if let removedAt {
            return report.add(.removalWrong, leaf: removedAt, message: id, "message \(id) is in the store, but the ledger has it removed (leaf \(removedAt))")
        }
        guard let state else { return report.add(.stateMissing, leaf: list.first ?? Int.max, message: id, "message \(id) has no state in the ledger") }
        report.findings += try LedgerReplay.replay(record, record.message, state: state, appended: appended, before: before)
    }

    /// Each leaf from 0 to `size`, in order, with its number.
    private func leaves(upTo size: Int, _ body: (Int, LedgerLeaf) throws(MsgError) -> Void) throws(MsgError) {
        var next = 0
        var failure: MsgError?
        try store.ledgerRuns(from: 0) { (first, bytes) throws(MsgError) -> Bool in
            var offset = 0
            var i = first
            while offset < bytes.count && i < size {
                guard let (leaf, end) = LedgerLeaf.read(bytes, at: offset) else {
                    failure = MsgError(.badInput, "ledger: leaf \(i) cannot be read: the log was changed outside msg")
                    return false
                }
                if i >= next {
                    guard i == next else {
                        failure = MsgError(.badInput, "ledger: leaves \(next) to \(i - 1) are missing: the log was changed outside msg")
                        return false
                    }
                    try body(i, leaf)
                    next += 1
                }
                offset = end
                i += 1
            }
            return next < size
        }
        if let failure { throw failure }
        if next < size { throw MsgError(.badInput, "ledger: leaves from \(next) on are missing: the log was changed outside msg") }
    }

    static func describe(_ leaf: LedgerLeaf) -> String {
        switch leaf.kind {
        case .state: "its state with \(leaf.n) history entries"
        case .entry: "history entry \(leaf.n)"
        case .removed: "its removal"
        case .began: "the beginning"
        }
    }
}

/// One bit per leaf.
struct Bits {
    private var words: [UInt64]
    init(count: Int) { words = [UInt64](repeating: 0, count: (count + 63) / 64) }
    subscript(i: Int) -> Bool {
        get { words[i >> 6] & (1 << UInt64(i & 63)) != 0 }
        set {
            if newValue { words[i >> 6] |= 1 << UInt64(i & 63) } else { words[i >> 6] &= ~(1 << UInt64(i & 63)) }
        }
    }
}

/// The runs of leaves last looked up, read whole: a message's leaves sit near the
/// others' of its time, so most lookups find their run here. Bounded by leaves, not
/// runs: a run holds one commit's leaves, up to tens of thousands.
struct RunCache {
    let store: any JournalStore
    private var runs: [Int: [LedgerLeaf]] = [:]
    private var order: [Int] = []
    private var last: (first: Int, leaves: [LedgerLeaf])?
    /// The leaves in `runs`.
    private var held = 0
    private static let most = 65_536

    init(store: any JournalStore) { self.store = store }

    mutating func leaf(_ index: Int) throws(MsgError) -> LedgerLeaf? {
        if let last, index >= last.first, index < last.first + last.leaves.count { return last.leaves[index - last.first] }
        // The last run starting at or before `index`, in the sorted starts.
        var lo = 0, hi = order.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if order[mid] <= index { lo = mid + 1 } else { hi = mid }
        }
        if lo > 0, let leaves = runs[order[lo - 1]], index < order[lo - 1] + leaves.count {
            let first = order[lo - 1]
            last = (first, leaves)
            return leaves[index - first]
        }
        guard let (first, bytes) = try store.ledgerRun(holding: index) else { return nil }
        var leaves: [LedgerLeaf] = []
        let whole = bytes.withUnsafeBytes { (b) -> Bool in
            var offset = 0
            while offset < b.count {
                guard let (leaf, end) = LedgerLeaf.read(b, at: offset) else { return false }
                leaves.append(leaf)
                offset = end
            }
            return true
        }
        guard whole else { throw MsgError(.badInput, "ledger: leaf \(first + leaves.count) cannot be read: the log was changed outside msg") }
        // At most about 64,000 leaves kept (some 6 MB): a message's leaves sit in the
        // runs of its own commits, read in the order of the messages.
        if held + leaves.count > Self.most {
            runs = [:]
            order = []
            held = 0
        }
        held += leaves.count
        runs[first] = leaves
        var at = order.count
        while at > 0 && order[at - 1] > first { at -= 1 }
        order.insert(first, at: at)
        last = (first, leaves)
        return index < first + leaves.count ? leaves[index - first] : nil
    }
}
