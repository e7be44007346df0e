import MsgKit
import MsgSupport
import NIOCore
import PostgresNIO

/// The ledger as `msg ledger` reads it (``JournalStore``, ``PostgresLedger``).
extension PostgresStore {
    /// Numbers the runs committed so far and reads in one snapshot that sees all of
    /// them numbered, holding the sequencer's lock throughout: a checkpoint's leaves
    /// keep their numbers for ever. Writers never wait for it. It writes the numbers
    /// also for a store opened for reading: they are the log's, not a change of any
    /// message.
    public func ledgerRead<R>(_ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        if inSnapshot { return try body() }
        let s = db.address.schema
        // Taken before the snapshot, so the snapshot sees every run an earlier
        // sequencer numbered.
        try db.query(PostgresLedger.lock(s), "waiting for the ledger's lock")
        defer { _ = try? db.query(PostgresLedger.unlock(s), "releasing the ledger's lock") }
        return try db.transaction("reading the ledger") { () throws(MsgError) -> R in
            try db.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", "reading the ledger")
            try PostgresLedger.sequence(db)
            inSnapshot = true
            defer {
                inSnapshot = false
                runs = nil
            }
            return try body()
        }
    }

    public func ledgerSize() throws(MsgError) -> Int {
        let rows = try db.query(PostgresQuery(unsafeSQL: """
            SELECT coalesce((SELECT first + count FROM \(db.address.schema).commits WHERE first IS NOT NULL ORDER BY first DESC LIMIT 1), 0)
            """), "reading the ledger")
        var size = 0
        for row in rows {
            do { size = Int(try row.decode(Int64.self)) } catch { throw Self.corrupt("the ledger's size", error) }
        }
        return size
    }

    public func ledgerRuns(from: Int, _ body: (Int, UnsafeRawBufferPointer) throws(MsgError) -> Bool) throws(MsgError) {
        let s = db.address.schema
        var start = Int64(from)
        var holding = true
        while true {
            var b = PostgresBindings(capacity: 1)
            b.append(start)
            // The run holding `from`, then those after it, 16 at a time: a run holds up
            // to a whole batch's leaves, some megabytes.
            let rows = try db.query(PostgresQuery(unsafeSQL: holding ? """
                SELECT first, leaves FROM \(s).commits
                WHERE first >= coalesce((SELECT max(first) FROM \(s).commits WHERE first <= $1), 0) ORDER BY first LIMIT 16
                """ : "SELECT first, leaves FROM \(s).commits WHERE first >= $1 ORDER BY first LIMIT 16", binds: b), "reading the ledger")
            holding = false
            var n = 0
            for row in rows {
                n += 1
                let (first, leaves): (Int64, ByteBuffer)
                do { (first, leaves) = try row.decode((Int64, ByteBuffer).self) } catch { throw Self.corrupt("the ledger", error) }
                start = first + 1
                let more = try leaves.withUnsafeReadableBytes { (bytes) throws(MsgError) -> Bool in try body(Int(first), bytes) }
                if !more { return }
            }
            if n < 16 { return }
        }
    }

    public func ledgerRun(holding index: Int) throws(MsgError) -> (first: Int, bytes: [UInt8])? {
        var b = PostgresBindings(capacity: 1)
        b.append(Int64(index))
        let rows = try db.query(PostgresQuery(unsafeSQL: """
            SELECT first, count, leaves FROM \(db.address.schema).commits WHERE first <= $1 ORDER BY first DESC LIMIT 1
            """, binds: b), "reading the ledger")
        for row in rows {
            do {
                let (first, count, leaves) = try row.decode((Int64, Int32, ByteBuffer).self)
                guard Int(first) + Int(count) > index else { return nil }
                return (Int(first), Array(leaves.readableBytesView))
            } catch {
                throw Self.corrupt("the ledger", error)
            }
        }
        return nil
    }

    public func ledgerMessages(_ body: (EncodedMessage?, String, [Int]?) throws(MsgError) -> Bool) throws(MsgError) {
        try ledgerRead { () throws(MsgError) in
            let runs: PostgresLedger.Runs
            if let read = self.runs { runs = read } else { runs = try PostgresLedger.Runs(db) }
            self.runs = runs
            // The messages in FIFO order, a page at a time.
            var after: (Int64, String)?
            while true {
                var b = PostgresBindings(capacity: 2)
                b.append(after?.0 ?? Int64.min)
                b.append(after?.1 ?? "")
                let rows = try db.query(PostgresQuery(unsafeSQL: """
                    SELECT \(StoredRow.columns), ledger FROM \(table) WHERE (created_at, id) > ($1, $2) ORDER BY created_at, id LIMIT 5000
                    """, binds: b), "reading the messages")
                var n = 0
                for row in rows {
                    n += 1
                    let stored = try StoredRow(row)
                    after = (stored.createdAt, stored.id)
                    var cells = row.makeIterator()
                    for _ in 0..<6 { _ = cells.next() }
                    let text: String?
                    do { text = try cells.next()?.decode(String?.self) ?? nil } catch { throw Self.corrupt("a message's ledger", error) }
                    if try !body(stored.record(), stored.id, text.map { runs.numbers($0) ?? [] }) { return }
                }
                if n < 5000 { break }
            }
            var seq: Int64 = 0
            while true {
                var b = PostgresBindings(capacity: 1)
                b.append(seq)
                let rows = try db.query(PostgresQuery(unsafeSQL: """
                    SELECT seq, id, ledger FROM \(db.address.schema).ledger_removed WHERE seq > $1 ORDER BY seq LIMIT 5000
                    """, binds: b), "reading the removed messages")
                var n = 0
                for row in rows {
                    n += 1
                    let (at, id, text): (Int64, String, String)
                    do { (at, id, text) = try row.decode((Int64, String, String).self) } catch { throw Self.corrupt("a removed message", error) }
                    seq = at
                    if try !body(nil, id, runs.numbers(text) ?? []) { return }
                }
                if n < 5000 { return }
            }
        }
    }
}
