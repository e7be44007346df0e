import MsgKit

/// The JSON store's ledger (msg-ledger(1), ``JournalStore``), as its file's lines
/// build it, held in memory with the queue.
///
/// Each commit msg writes starts with its **journal line** (docs/DESIGN.md 6), a
/// `$ledger` line that says how many lines the commit has, its leaves, what the
/// commit means beside its records (``CommitEffects/journalBytes(into:)``, in hex)
/// and, for each change after it in order, how many of the leaves are its own and
/// the facts the recorder (``ChangeRecorder``) chooses the message's next leaves
/// from (`[leaves,entries,print]`; a removal `[leaves]`):
///
///     {"$ledger":"HEX","commit":N,"effects":"HEX","rows":[[1,2,P],[1]]}
///     {"id":ID,...the record...}
///     {"$deleted":ID}
///     {"$destination":KEY,"state":TEXT}
///
/// The leaves are numbered after the ledger's last in the order of the file. A
/// commit whose lines are not all there is a write cut short, set aside whole
/// (``StoreState``). `{"$ledger":"","kept":NAME,"value":"HEX"}` keeps a value beside
/// the journal: the counts folded (`fold`, ``CommitFold``) or where a claim scan
/// stopped (`hint:KIND`).
///
/// **Older lines** (msg before the journal) are read as they were written: each
/// change after a `$ledger` line of its own (`"id":ID,"entries":N,"print":P`, a
/// removal `"removed":true`), a commit of several counted on its first. A `$ledger`
/// line without `id` (the ledger's start in a store that held messages before it;
/// a compacted file's leaves) stands alone; a compacted file gives each message its
/// whole list (`"list":[N,...]`) and each removed one a `{"$removed":ID,"list":[...]}`
/// line, as msg still compacts. An older msg reads a journal line as leaves that
/// stand alone, and the changes after it as changes it has no leaves for: it loses
/// nothing, and `msg ledger verify` names them. The change of a line written by
/// hand, without its `$ledger` line, is in no leaf, and `verify` names it.
struct JSONLedger {
    /// What the ledger holds of a stored message.
    struct Row: Equatable {
        /// How many of its history entries its leaves hold (``StoredFacts/ledgerEntries``).
        var entries: Int
        /// Its content's fingerprint (``StoredFacts/contentPrint``).
        var print: Int64
        /// The numbers of its leaves, in order.
        var list: [Int]
    }

    /// Whether the file has a ledger (a `$ledger` or `$removed` line was read or written).
    private(set) var began = false
    /// Every leaf, one after another.
    private(set) var bytes: [UInt8] = []
    /// Where each leaf starts in ``bytes``, and where the last ends.
    private(set) var offsets: [Int] = [0]
    /// The stored messages' rows, by id (none: stored before the ledger, or by hand).
    private(set) var rows: [String: Row] = [:]
    /// The removed messages' leaves, in the order they were removed.
    private(set) var removed: [(id: String, list: [Int])] = []

    /// How many leaves it holds.
    var count: Int { offsets.count - 1 }

    /// A `$ledger` line: leaves, and what they mean for the message the next line changes.
    struct Entry: Equatable {
        var leaves: [UInt8]
        /// The message the next line changes; nil: the leaves stand alone.
        var id: String?
        var entries = -1
        var print: Int64 = 0
        /// The message's whole list (a compacted file); nil: its list and these leaves.
        var list: [Int]?
        /// The next line removes the message: its list goes to the removed ones.
        var isRemoval = false
        /// The first line of a commit of several: how many lines the commit has,
        /// this one included.
        var commitLines: Int?
        /// A journal line's effects and rows.
        var journal: Journal?
        /// A value kept beside the journal (its leaves are none).
        var kept: Kept?
    }

    /// What a journal line says beside its leaves.
    struct Journal: Equatable {
        /// ``CommitEffects/journalBytes(into:)``.
        var effects: [UInt8]
        /// Per change after the line, in order: its leaves, and a record's facts.
        var rows: [JournalRow]
    }

    struct JournalRow: Equatable {
        var leaves: Int
        /// A record's ``StoredFacts/ledgerEntries``; nil for a removal.
        var entries: Int?
        var print: Int64 = 0
    }

    /// A value kept by name: the last one read wins.
    struct Kept: Equatable {
        var name: String
        var value: [UInt8]
    }

    /// Adds an entry's leaves and what it says of its message.
    /// - Throws: `corrupt` when its bytes are not whole leaves.
    mutating func apply(_ e: Entry) throws(MsgError) {
        began = true
        let first = count
        guard let ends = Self.ends(of: e.leaves) else { throw MsgError(.corrupt, "a $ledger line holds bytes that are not whole leaves") }
        let base = bytes.count
        offsets.append(contentsOf: ends.map { base + $0 })
        bytes.append(contentsOf: e.leaves)
        guard let id = e.id else { return }
        took(id, first..<count, entries: e.isRemoval ? nil : e.entries, print: e.print, list: e.list)
    }

    /// Gives message `id` the leaves numbered `leaves` after those it has (`list`: its
    /// whole list instead); without `entries`, it was removed.
    mutating func took(_ id: String, _ leaves: Range<Int>, entries: Int?, print: Int64, list: [Int]? = nil) {
        guard let entries else {
            removed.append((id, (rows[id]?.list ?? []) + leaves))
            rows[id] = nil
            return
        }
        rows[id] = Row(entries: entries, print: print, list: list ?? ((rows[id]?.list ?? []) + leaves))
    }

    /// Where each leaf of `leaves` ends, in order; nil when they are not whole leaves.
    static func ends(of leaves: [UInt8]) -> [Int]? {
        leaves.withUnsafeBytes { raw in
            var ends: [Int] = []
            var at = 0
            while at < raw.count {
                guard let (_, end) = LedgerLeaf.read(raw, at: at) else { return nil }
                ends.append(end)
                at = end
            }
            return ends
        }
    }

    /// A removed message's whole list (a `$removed` line of a compacted file).
    mutating func keepRemoved(_ id: String, _ list: [Int]) {
        began = true
        removed.append((id, list))
    }

    /// The leaves numbered `range`, as they are kept.
    func leaves(_ range: Range<Int>) -> ArraySlice<UInt8> {
        bytes[offsets[range.lowerBound]..<offsets[range.upperBound]]
    }

    // MARK: Lines

    /// Writes `e` as its `$ledger` line, newline included.
    static func write(_ e: Entry, to w: inout JSONWriter) {
        w.raw("{\"$ledger\":\"")
        e.leaves.withUnsafeBufferPointer { Hex.write($0, to: &w.bytes) }
        w.raw("\"")
        if let n = e.commitLines {
            w.raw(",\"commit\":")
            w.int(n)
        }
        if let j = e.journal {
            w.raw(",\"effects\":\"")
            j.effects.withUnsafeBufferPointer { Hex.write($0, to: &w.bytes) }
            w.raw("\",\"rows\":[")
            for (i, row) in j.rows.enumerated() {
                w.raw(i == 0 ? "[" : ",[")
                w.int(row.leaves)
                if let entries = row.entries {
                    w.raw(",")
                    w.int(entries)
                    w.raw(",")
                    w.int(Int(row.print))
                }
                w.raw("]")
            }
            w.raw("]")
        }
        if let k = e.kept {
            w.raw(",\"kept\":")
            w.string(k.name)
            w.raw(",\"value\":\"")
            k.value.withUnsafeBufferPointer { Hex.write($0, to: &w.bytes) }
            w.raw("\"")
        }
        if let id = e.id {
            w.raw(",\"id\":")
            w.string(id)
            if e.isRemoval {
                w.raw(",\"removed\":true")
            } else {
                w.raw(",\"entries\":")
                w.int(e.entries)
                w.raw(",\"print\":")
                w.int(Int(e.print))
            }
            if let list = e.list { writeList(list, to: &w) }
        }
        w.raw("}\n")
    }

    /// Writes a removed message's `$removed` line, newline included.
    static func writeRemoved(_ id: String, _ list: [Int], to w: inout JSONWriter) {
        w.raw("{\"$removed\":")
        w.string(id)
        writeList(list, to: &w)
        w.raw("}\n")
    }

    private static func writeList(_ list: [Int], to w: inout JSONWriter) {
        w.raw(",\"list\":[")
        for (i, n) in list.enumerated() {
            if i > 0 { w.raw(",") }
            w.int(n)
        }
        w.raw("]")
    }

    private static let prefix = Array(#"{"$ledger":""#.utf8)

    /// The entry of a `$ledger` line as msg writes it, read without parsing its
    /// leaves as a JSON string (half of a store's lines: their hex is most of the
    /// file), or nil for another line.
    /// - Throws: `corrupt` when it starts as one and is not one.
    static func entry(_ line: UnsafeBufferPointer<UInt8>) throws(MsgError) -> Entry? {
        guard line.count > prefix.count, line.starts(with: prefix) else { return nil }
        let hexStart = prefix.count
        var end = hexStart
        while end < line.count && line[end] != UInt8(ascii: "\"") { end += 1 }
        guard end < line.count, let leaves = Hex.decode(UnsafeBufferPointer(rebasing: line[hexStart..<end])) else {
            throw MsgError(.corrupt, "a $ledger line whose leaves are not hexadecimal")
        }
        // The rest, `,"id":…}` or `}`, read as the object `{"id":…}`.
        var rest: [UInt8] = [UInt8(ascii: "{")]
        rest.append(contentsOf: line[(end + 1)...].drop { $0 == UInt8(ascii: ",") })
        let value: JSONValue
        do throws(JSONParser.Failure) {
            value = try rest.withUnsafeBufferPointer { (b) throws(JSONParser.Failure) in try JSONParser.parse(b) }
        } catch {
            throw MsgError(.corrupt, "invalid JSON: \(error)")
        }
        return try entry(value, leaves: leaves)
    }

    /// The entry of a parsed `$ledger` line. - Throws: `corrupt` when it is not one.
    static func entry(_ value: JSONValue, hex: String) throws(MsgError) -> Entry {
        guard let leaves = Hex.decode(hex) else { throw MsgError(.corrupt, "a $ledger line whose leaves are not hexadecimal") }
        return try entry(value, leaves: leaves)
    }

    private static func entry(_ value: JSONValue, leaves: [UInt8]) throws(MsgError) -> Entry {
        var e = Entry(leaves: leaves)
        if let n = value["commit"] {
            guard let n = n.intValue, n >= 1 else { throw MsgError(.corrupt, "a $ledger line whose commit is not a count of lines") }
            e.commitLines = n
        }
        if let effects = value["effects"] {
            guard let hex = effects.stringValue, let bytes = Hex.decode(hex) else { throw MsgError(.corrupt, "a journal line whose effects are not hexadecimal") }
            e.journal = Journal(effects: bytes, rows: try journalRows(value["rows"] ?? .null))
        }
        if let name = value["kept"] {
            guard let name = name.stringValue, let hex = value["value"]?.stringValue, let bytes = Hex.decode(hex) else {
                throw MsgError(.corrupt, "a kept line without a name and a hexadecimal value")
            }
            e.kept = Kept(name: name, value: bytes)
        }
        guard let id = value["id"] else { return e }
        guard let id = id.stringValue else { throw MsgError(.corrupt, "a $ledger line whose id is not a string") }
        e.id = id
        e.list = try value["list"].map { (v) throws(MsgError) in try list(v) }
        if case .bool(true)? = value["removed"] {
            e.isRemoval = true
            return e
        }
        guard let entries = value["entries"]?.intValue, let print = value["print"]?.intValue else {
            throw MsgError(.corrupt, "a $ledger line without entries and print")
        }
        e.entries = entries
        e.print = Int64(print)
        return e
    }

    /// A journal line's `rows`. - Throws: `corrupt` when they are not `[leaves]` or
    /// `[leaves,entries,print]` each.
    static func journalRows(_ value: JSONValue) throws(MsgError) -> [JournalRow] {
        guard case .array(let items) = value else { throw MsgError(.corrupt, "a journal line whose rows are not an array") }
        var out: [JournalRow] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard case .array(let n) = item, n.count == 1 || n.count == 3, let leaves = n[0].intValue, leaves >= 0 else {
                throw MsgError(.corrupt, "a journal line whose rows are not [leaves] or [leaves,entries,print]")
            }
            guard n.count == 3 else { out.append(JournalRow(leaves: leaves)); continue }
            guard let entries = n[1].intValue, let print = n[2].intValue else { throw MsgError(.corrupt, "a journal line's row whose entries or print is not a number") }
            out.append(JournalRow(leaves: leaves, entries: entries, print: Int64(print)))
        }
        return out
    }

    /// A `list` of leaf numbers. - Throws: `corrupt` when it is not one.
    static func list(_ value: JSONValue) throws(MsgError) -> [Int] {
        guard case .array(let items) = value else { throw MsgError(.corrupt, "a ledger list that is not an array") }
        var out: [Int] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard let n = item.intValue, n >= 0 else { throw MsgError(.corrupt, "a ledger list of something other than leaf numbers") }
            out.append(n)
        }
        return out
    }
}
