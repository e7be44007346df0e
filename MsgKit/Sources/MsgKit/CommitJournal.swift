/// The commit journal (ABI 9.6; docs/DESIGN.md 6): a store keeps what each commit
/// means beside its rows (``CommitEffects``, as ``ChangeRecorder`` decided it) as
/// **one row per commit**, written in that commit: its sequence, the number of its
/// first leaf, these bytes (``CommitEffects/journalBytes(into:)``) and its leaves
/// (``CommitEffects/leaves``, ``LedgerLeaf``'s bytes). The store reads and decides
/// nothing of them: MsgKit folds them into the counts (``CommitFold``), answers
/// floors since a mark (``CommitFold/floor(since:newest:_:)``) and the ledger's runs
/// are the rows' leaves. A store declares it as one capability (``JournalStore``, ABI 10).
///
/// The bytes, format 1, all numbers little-endian:
/// - the format (1);
/// - the floor: 0 none, 1 the lowest `created_at` written (8 bytes of milliseconds
///   follow), 2 all;
/// - the counts by creation minute: their number (4 bytes), then each as its status
///   (2 bytes of length, the UTF-8), its minute and its delta (8 bytes each);
/// - the ``Tally``'s deltas as log text (``Tally/logText(into:)``), to the end.
extension CommitEffects {
    /// The format of ``journalBytes(into:)``.
    public static var journalFormat: UInt8 { 1 }

    /// The commit's row bytes, but its leaves (they are a column of their own, so a
    /// reader of counts or floors reads no leaf).
    public func journalBytes(into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        out.append(Self.journalFormat)
        switch floor {
        case .none: out.append(0)
        case .lowest(let t):
            out.append(1)
            JournalBytes.put(t.milliseconds, &out)
        case .all: out.append(2)
        }
        JournalBytes.put(created, tally, &out)
    }

    /// The floor a journal row's bytes keep; nil when they are not format 1.
    public static func floor(ofJournal bytes: UnsafeRawBufferPointer) -> Floor? {
        guard bytes.count >= 2, bytes[0] == journalFormat else { return nil }
        switch bytes[1] {
        case 0: return Floor.none
        case 1: return bytes.count >= 10 ? .lowest(Timestamp(milliseconds: JournalBytes.int64(bytes, 2))) : nil
        case 2: return .all
        default: return nil
        }
    }
}

/// What the journal's rows up to a mark add up to: the ``Tally`` and the records
/// by status and creation minute (the last ``kept`` minutes). A store keeps it as a
/// snapshot (``snapshot(into:)``), rewritten when it folds, so a reader adds to it
/// only the rows after its mark: a store folds in the commit that appends the
/// ``foldEvery``th row since, or when this handle appended ``foldBytes`` of row
/// bytes since its last fold. A million records added to
/// 5,000 recipients left 17 MB of log unfolded: 140 ms for each `msg metrics`; 20 ms
/// with the bound at 2 MiB, which cost the flush and `queue add` 2-3% more folding
/// than 512 rows alone.
public struct CommitFold: Sendable, Equatable {
    /// The last journal row folded in.
    public var mark: Int64 = 0
    public var tally = Tally()
    /// Records by status and creation minute.
    public var created: [CreatedMinute: Int] = [:]

    /// The minutes kept: eight days, one more than the oldest bucket of `queue stats`.
    public static let kept: Int64 = 8 * 24 * 60
    /// How many rows a store lets pass before it folds, and how many bytes.
    public static let foldEvery: Int64 = 512
    public static let foldBytes = 2 << 20
    /// The snapshot's format.
    static let snapshotFormat: UInt8 = 1

    public init() {}

    /// A snapshot read back; nil when it is not one this MsgKit wrote.
    public init?(snapshot bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 9, bytes[0] == Self.snapshotFormat else { return nil }
        mark = JournalBytes.int64(bytes, 1)
        guard JournalBytes.read(bytes, from: 9, &created, &tally) else { return nil }
    }

    /// The snapshot's bytes: the format, the mark, then as a journal row's counts.
    public func snapshot(into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        out.append(Self.snapshotFormat)
        JournalBytes.put(mark, &out)
        JournalBytes.put(created, tally, &out)
    }

    /// Adds a journal row's bytes (``CommitEffects/journalBytes(into:)``).
    /// - Returns: false when they are not format 1 (nothing added) or are cut short
    ///   (what came before the cut is added: a store's row is written whole or not at all).
    @discardableResult
    public mutating func add(journal bytes: UnsafeRawBufferPointer) -> Bool {
        guard let floor = CommitEffects.floor(ofJournal: bytes) else { return false }
        if case .lowest = floor { return JournalBytes.read(bytes, from: 10, &created, &tally) }
        return JournalBytes.read(bytes, from: 2, &created, &tally)
    }

    /// Adds what a commit recorded (a store counting afresh, a test).
    public mutating func add(_ effects: CommitEffects) {
        tally.add(effects.tally)
        for (k, n) in effects.created { created[k, default: 0] += n }
    }

    /// Forgets the minutes older than ``kept`` and those at zero.
    public mutating func prune(now: Timestamp) {
        let oldest = CreatedMinute.minute(of: now) - Self.kept
        created = created.filter { $0.key.minute >= oldest && $0.value != 0 }
    }

    /// Per status, the records created after each of `times` (in their order), then
    /// all of them (``JournalStore/created(after:)``): the minutes after the one a
    /// time falls in, from the fold, and that minute's records after it, from
    /// `partial` (the store's records created after a time and before the end of its
    /// minute, by status). Nil for a time older than the fold keeps.
    public func created<E: Error>(after times: [Timestamp], now: Timestamp,
                                  partial: (Timestamp) throws(E) -> [String: Int]) throws(E) -> [String: [Int]]? {
        let oldest = CreatedMinute.minute(of: now) - Self.kept
        guard let first = times.map({ CreatedMinute.minute(of: $0) }).min(), first > oldest else { return nil }
        var out: [String: [Int]] = [:]
        let zero = Array(repeating: 0, count: times.count + 1)
        tally.forEach { (key: Tally.Key, n: Int) in
            if key.kind == .messages { out[key.b, default: zero][times.count] += n }
        }
        for (key, n) in created where key.minute > first {
            for (i, t) in times.enumerated() where key.minute > CreatedMinute.minute(of: t) {
                out[key.status, default: zero][i] += n
            }
        }
        for (i, t) in times.enumerated() {
            for (status, n) in try partial(t) { out[status, default: zero][i] += n }
        }
        return out
    }

    /// How far back the rows after `mark` wrote (``JournalStore/changeFloor(since:)``),
    /// given the floors of those rows up to `newest`, the store's last.
    public static func floor<S: Sequence>(since mark: Int64?, newest: Int64, _ floors: S) -> ChangeFloor
        where S.Element == CommitEffects.Floor? {
        // No mark, or one ahead of this store (another file now at its path).
        guard let mark, mark <= newest else { return ChangeFloor(mark: newest, floor: .all) }
        var lowest: Timestamp?
        for f in floors {
            switch f {
            case .none?: continue
            case .lowest(let t)?: if lowest.map({ t < $0 }) ?? true { lowest = t }
            case .all?, nil: return ChangeFloor(mark: newest, floor: .all)
            }
        }
        return ChangeFloor(mark: newest, floor: lowest.map { .from(ClaimPosition(createdAt: $0, id: "")) } ?? .none)
    }
}

/// The little-endian numbers and the counts' layout the journal and the fold share.
enum JournalBytes {
    static func put(_ v: Int64, _ out: inout [UInt8]) {
        withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) }
    }

    static func int64(_ b: UnsafeRawBufferPointer, _ at: Int) -> Int64 {
        Int64(littleEndian: b.loadUnaligned(fromByteOffset: at, as: Int64.self))
    }

    static func put(_ created: [CreatedMinute: Int], _ tally: Tally, _ out: inout [UInt8]) {
        let minutes = created.filter { $0.value != 0 }
        withUnsafeBytes(of: UInt32(minutes.count).littleEndian) { out.append(contentsOf: $0) }
        for (k, n) in minutes {
            let status = Array(k.status.utf8.prefix(Int(UInt16.max)))
            withUnsafeBytes(of: UInt16(status.count).littleEndian) { out.append(contentsOf: $0) }
            out.append(contentsOf: status)
            put(k.minute, &out)
            put(Int64(n), &out)
        }
        var text: [UInt8] = []
        tally.logText(into: &text)
        out.append(contentsOf: text)
    }

    /// Adds the counts kept from `at` on; false when they do not read.
    static func read(_ b: UnsafeRawBufferPointer, from at: Int, _ created: inout [CreatedMinute: Int], _ tally: inout Tally) -> Bool {
        var i = at
        guard b.count - i >= 4 else { return false }
        let count = Int(UInt32(littleEndian: b.loadUnaligned(fromByteOffset: i, as: UInt32.self)))
        i += 4
        for _ in 0..<count {
            guard b.count - i >= 2 else { return false }
            let length = Int(UInt16(littleEndian: b.loadUnaligned(fromByteOffset: i, as: UInt16.self)))
            i += 2
            guard b.count - i >= length + 16 else { return false }
            let status = String(decoding: UnsafeRawBufferPointer(rebasing: b[i..<(i + length)]), as: UTF8.self)
            i += length
            created[CreatedMinute(status: status, minute: int64(b, i)), default: 0] += Int(int64(b, i + 8))
            i += 16
        }
        return tally.add(logText: UnsafeBufferPointer(rebasing: b.assumingMemoryBound(to: UInt8.self)[i...]))
    }
}
