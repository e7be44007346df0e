import MsgKit

/// Where each commit changed the queue (schema 7, ``ChangeFloors``): one row per
/// commit that wrote a record or a destination state, appended in that commit
/// (``SQLiteStore/counted(_:_:)``) with the floor the recorder gave it
/// (``CommitEffects/floor``): the earliest `created_at` it wrote (the floor is the
/// first position of that millisecond), or none for a state (anything may have
/// changed). `flush --watch` asks, when
/// another process committed, how far back those commits reach, and its scan goes
/// back only that far: with a million waiting behind suspended destinations, a
/// message added by another process cost the watch a walk of the million (142 ms)
/// before.
///
/// `claim_hints` keeps, per kind of run, where the last one-shot run's scan stopped
/// and what it held (``ChangeFloors/saveScanHint(_:_:)``): the next run starts there when the floors since
/// its mark allow.
///
/// `seq` is the rowid: the old rows are deleted, never the newest, so it only grows.
/// The last ``kept`` rows stay; a reader further behind is told ``ChangeFloor/Floor/all``.
enum SQLiteFloors {
    static let table = """
        CREATE TABLE claim_floors (seq INTEGER PRIMARY KEY, created_at INTEGER);
        CREATE TABLE claim_hints (kind TEXT NOT NULL PRIMARY KEY, hint TEXT NOT NULL) WITHOUT ROWID;
        """

    /// How many of the last commits are kept, and how often the older ones go.
    static let kept: Int64 = 4096
    static let pruneEvery: Int64 = 1024

    /// Appends the commit's row, in the caller's transaction, and forgets old rows
    /// every ``pruneEvery`` commits.
    static func apply(_ floor: CommitEffects.Floor, _ db: SQLiteDatabase) throws(MsgError) {
        let lowest: Int64?
        switch floor {
        case .none: return
        case .lowest(let t): lowest = t.milliseconds
        case .all: lowest = nil
        }
        let append = try db.statement("INSERT INTO claim_floors (created_at) VALUES (?1) RETURNING seq")
        defer { append.reset() }
        append.bind(1, lowest)
        guard try append.step("noting where the queue changed") else { return }
        let seq = append.int64(0)
        append.reset()
        if seq % pruneEvery == 0 {
            let prune = try db.statement("DELETE FROM claim_floors WHERE seq <= ?1")
            prune.bind(1, seq - kept)
            try prune.run("forgetting where the queue changed long ago")
        }
    }

    /// The answer of ``ChangeFloors/changeFloor(since:)``.
    static func read(since mark: Int64?, _ db: SQLiteDatabase) throws(MsgError) -> ChangeFloor {
        let bounds = try db.statement("SELECT coalesce(max(seq), 0), coalesce(min(seq), 0) FROM claim_floors")
        _ = try bounds.step("reading where the queue changed")
        let newest = bounds.int64(0)
        let oldest = bounds.int64(1)
        bounds.reset()
        guard let mark else { return ChangeFloor(mark: newest, floor: .all) }
        if mark == newest { return ChangeFloor(mark: newest, floor: .none) }
        // Behind what is kept, or ahead of this store (another file now at its path).
        if mark > newest || oldest > mark + 1 { return ChangeFloor(mark: newest, floor: .all) }
        let s = try db.statement("""
            SELECT created_at IS NULL, created_at FROM claim_floors WHERE seq > ?1 AND seq <= ?2
            ORDER BY created_at IS NOT NULL, created_at LIMIT 1
            """)
        s.bind(1, mark)
        s.bind(2, newest)
        defer { s.reset() }
        guard try s.step("reading where the queue changed") else { return ChangeFloor(mark: newest, floor: .none) }
        if s.int64(0) != 0 { return ChangeFloor(mark: newest, floor: .all) }
        let position = ClaimPosition(createdAt: Timestamp(milliseconds: s.int64(1)), id: "")
        return ChangeFloor(mark: newest, floor: .from(position))
    }
}

extension SQLiteStore: ChangeFloors {
    public func changeFloor(since mark: Int64?) throws(MsgError) -> ChangeFloor {
        try guarded { () throws(MsgError) in try SQLiteFloors.read(since: mark, db) }
    }

    public func scanHint(_ kind: String) throws(MsgError) -> String? {
        try guarded { () throws(MsgError) -> String? in
            let s = try db.statement("SELECT hint FROM claim_hints WHERE kind = ?1")
            s.bind(1, kind)
            defer { s.reset() }
            guard try s.step("reading where the last claim stopped") else { return nil }
            return String(decoding: s.bytes(0), as: UTF8.self)
        }
    }

    /// In a transaction of its own, not ``counted(_:_:)``: no floor, no count.
    public func saveScanHint(_ kind: String, _ hint: String) throws(MsgError) {
        try guarded { () throws(MsgError) in
            try db.transaction("noting where the claim stopped") { () throws(MsgError) in
                let s = try db.statement("INSERT INTO claim_hints (kind, hint) VALUES (?1, ?2) ON CONFLICT(kind) DO UPDATE SET hint = ?2")
                s.bind(1, kind)
                s.bind(2, hint)
                defer { s.reset() }
                try s.run("noting where the claim stopped")
            }
        }
    }
}
