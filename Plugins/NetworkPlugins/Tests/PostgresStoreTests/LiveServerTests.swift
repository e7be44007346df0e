import Dispatch
import Foundation
import MsgKit
import MsgSupport
import MsgKitTesting
import PostgresNIO
@testable import PostgresStore
import Synchronization
import Testing

/// Stores handed to worker threads, one each: no store is used by two threads.
final class Workers: @unchecked Sendable {
    let stores: [PostgresStore]
    init(stores: [PostgresStore]) { self.stores = stores }
}

/// Behaviour only a real server shows: several workers at once, TLS, logins.
@Suite struct LiveServerTests {
    static func claimAll(_ store: PostgresStore, batch: Int) throws(MsgError) -> [String] {
        var ids: [String] = []
        while true {
            let got = try store.claim(Query(statuses: [.queued]), limit: batch) { (m) throws(MsgError) -> Message? in
                var x = m
                try x.transition(to: .sending, event: "attempt", at: Fixtures.t0)
                x.lease = .init(host: "h", pid: 1, until: Fixtures.t0.adding(.seconds(30)))
                return x
            }
            if got.isEmpty { return ids }
            ids += got.map(\.message.id)
        }
    }

    @Test func fourWorkersClaimingAtOnceTakeEachMessageOnce() throws {
        let url = try TestServer.freshURL()
        let total = 3000
        _ = try TestServer.open(url).add((0..<total).map { Fixtures.message($0, createdOffset: Int64($0)) })
        let results = Mutex<[Result<[String], MsgError>]>([])
        // Each worker connects first; then all start claiming together.
        let workers = Workers(stores: try (0..<4).map { _ throws(MsgError) in try TestServer.open(url) })
        let ready = DispatchGroup(), done = DispatchGroup()
        ready.enter()
        for i in 0..<4 {
            done.enter()
            // Threads of their own: GCD would run them a few at a time.
            Thread.detachNewThread {
                ready.wait()
                let r: Result<[String], MsgError>
                do throws(MsgError) {
                    r = .success(try Self.claimAll(workers.stores[i], batch: 37))
                } catch {
                    r = .failure(error)
                }
                results.withLock { $0.append(r) }
                done.leave()
            }
        }
        ready.leave()
        done.wait()
        let lists = try results.withLock { $0 }.map { try $0.get() }
        let all = lists.flatMap { $0 }
        #expect(all.count == total, "claimed \(all.count) of \(total)")
        #expect(Set(all).count == all.count, "\(all.count - Set(all).count) claimed twice")
        #expect(lists.filter { !$0.isEmpty }.count >= 2, "the work was shared: \(lists.map(\.count))")
        #expect(try TestServer.open(url).count(Query(statuses: [.sending])) == total)
    }

    @Test func processesStartingTogetherOnANewSchemaCreateItOnce() throws {
        let url = try TestServer.freshURL()
        let errors = Mutex<[MsgError]>([])
        DispatchQueue.concurrentPerform(iterations: 6) { i in
            do throws(MsgError) {
                _ = try TestServer.open(url).add([Fixtures.message(i)])
            } catch {
                errors.withLock { $0.append(error) }
            }
        }
        #expect(errors.withLock { $0 }.isEmpty, "\(errors.withLock { $0 }.map(\.message))")
        #expect(try TestServer.open(url).count(Query()) == 6)
    }

    @Test func aSchemaFromANewerMsgIsRefused() throws {
        let url = try TestServer.freshURL()
        let store = try TestServer.open(url)
        let schema = String(url.split(separator: "=").last!)
        let db = try BlockingConnection(try PostgresAddress(try PluginURL(url)), password: SystemCalls.environment("PGPASSWORD"))
        try db.query(PostgresQuery(unsafeSQL: "UPDATE \(schema).msg_schema SET version = 99"), "test")
        _ = store
        do {
            _ = try TestServer.open(url)
            Issue.record("opened a schema of version 99")
        } catch {
            #expect(error.code == .config && error.message.contains("version 99"), "\(error.message)")
        }
    }

    /// A schema 2 queue (schema 9 without its counts, its index of the records in
    /// flight, its floors, its counts by age, its ledger and its inbox, the version set
    /// back) is brought to 9 by the first store opened for writing, which counts what it
    /// holds: records by status and waiting ones by recipient, and the attempts
    /// their histories keep, and begins the ledger with them; a store opened for
    /// reading before that is refused.
    @Test func aVersion2SchemaIsCountedWhenMigrated() throws {
        let url = try TestServer.freshURL()
        let store = try TestServer.open(url)
        var records: [Message] = []
        for n in 0..<30 {
            var m = Fixtures.message(n, to: "r\(n % 4)@x", createdOffset: Int64(n))
            if n % 10 == 1 { m.body = String(repeating: "a large body, kept apart since schema 7 ", count: 60) }
            if n % 3 == 0 {
                try m.transition(to: .sending, event: "attempt", at: Fixtures.t0)
                try m.transition(to: n % 2 == 0 ? .sent : .failed, event: "outcome", at: Fixtures.t0.adding(.seconds(2)))
            }
            records.append(m)
        }
        _ = try store.add(records)
        let schema = String(url.split(separator: "=").last!)
        let db = try BlockingConnection(try PostgresAddress(try PluginURL(url)), password: SystemCalls.environment("PGPASSWORD"))
        for sql in ["DROP TABLE \(schema).kept", "DROP INDEX \(schema).messages_sending",
                    // As schema 2 kept it: every text whole in its row.
                    "UPDATE \(schema).messages SET record = content || record WHERE content IS NOT NULL",
                    "ALTER TABLE \(schema).messages DROP COLUMN content",
                    "ALTER TABLE \(schema).messages DROP COLUMN ledger, DROP COLUMN history_n, DROP COLUMN content_fp",
                    "DROP TABLE \(schema).commits", "DROP TABLE \(schema).ledger_removed",
                    "DROP FUNCTION \(schema).enqueue_all(jsonb), \(schema).enqueue(jsonb), \(schema).enqueue_checked(jsonb), \(schema).draft_problem(jsonb)",
                    "DROP TABLE \(schema).inbox", "DROP SEQUENCE \(schema).inbox_seq",
                    "UPDATE \(schema).msg_schema SET version = 2"] {
            try db.query(PostgresQuery(unsafeSQL: sql), "test")
        }
        #expect(throws: MsgError.self) { try TestServer.open(url, access: .read) }
        let migrated = try TestServer.open(url)
        var expected = Tally()
        for m in records {
            expected.added(m)
            expected.attempts(in: m)
        }
        let counts = try #require(try migrated.counts(now: Fixtures.t0, excluding: []))
        #expect(counts.tally == expected)
        #expect(counts.tally[.init(.attempts, "sent", "")] == 5)
        #expect(counts.tally[.init(.messages, "", "sent")] == 5)
        #expect(counts.tally[.init(.messages, "r1@x", "failed")] == 2)
        let index = try db.query(PostgresQuery(unsafeSQL: "SELECT to_regclass('\(schema).messages_sending') IS NOT NULL"), "test")
        #expect(try index.first?.decode(Bool.self) == true, "schema 4's index of the records in flight")
        let journal = try db.query(PostgresQuery(unsafeSQL: """
            SELECT to_regclass('\(schema).claim_floors') IS NULL AND to_regclass('\(schema).tallies') IS NULL AND to_regclass('\(schema).kept') IS NOT NULL
            """), "test")
        #expect(try journal.first?.decode(Bool.self) == true, "schema 11's journal, the tables it replaced gone")
        // Schema 9's inbox: enqueue() there, and what it enqueues read back.
        let enqueued = try db.query(PostgresQuery(unsafeSQL: "SELECT \(schema).enqueue('{\"to\":\"a\",\"body\":\"b\"}')::text"), "test")
        let id = try #require(enqueued.first).decode(String.self)
        let inbox = try db.query(PostgresQuery(unsafeSQL: "SELECT id::text, draft->>'body' FROM \(schema).inbox"), "test")
        #expect(try #require(inbox.first).decode((String, String).self) == (id, "b"), "schema 9's inbox")
        // Schema 6's counts by creation minute, filled from the records.
        let edge = Timestamp(milliseconds: Timestamp.now().milliseconds - 7 * 86_400_000)
        let byAge = try #require(try migrated.capabilities.journal?.created(after: [edge]))
        var want: [String: [Int]] = [:]
        for m in records { want[m.status.rawValue, default: [0, 0]][1] += 1 }
        for m in records where m.createdAt > edge { want[m.status.rawValue, default: [0, 0]][0] += 1 }
        #expect(byAge == want)
        // Schema 7 rewrote no record: the large ones read whole from their rows, and
        // are kept apart at their next change.
        for m in records { #expect(try migrated.get(m.id)?.json == EncodedMessage(m).json, "\(m.id) reads as stored") }
        var large = records[1]
        large.notBefore = Fixtures.t0
        #expect(try migrated.update([Change(large, expected: .queued)]) == [true])
        #expect(try migrated.get(large.id)?.json == EncodedMessage(large).json)
        let apart = try db.query(PostgresQuery(unsafeSQL: "SELECT count(*)::int4 FROM \(schema).messages WHERE content IS NOT NULL"), "test")
        #expect(try #require(apart.first).decode(Int32.self) == 1, "the changed one only")
        // Schema 8 began the ledger with the 30 messages before it; the one changed
        // since is in it as its whole state, the others in none yet.
        let (leaves, lists) = try migrated.ledgerRead { () throws(MsgError) -> ([LedgerLeaf], [String: [Int]?]) in
            var leaves: [LedgerLeaf] = []
            try migrated.ledgerRuns(from: 0) { (_, bytes) throws(MsgError) -> Bool in
                var at = 0
                while let (leaf, end) = LedgerLeaf.read(bytes, at: at) {
                    leaves.append(leaf)
                    at = end
                }
                return true
            }
            var lists: [String: [Int]?] = [:]
            try migrated.ledgerMessages { (_, id, list) throws(MsgError) -> Bool in
                lists[id] = list
                return true
            }
            return (leaves, lists)
        }
        #expect(leaves == [try LedgerLeaf.began(30), try LedgerLeaf.state(of: EncodedMessage(large))])
        #expect(lists.count == 30 && lists[large.id] == [1] && lists.values.filter { $0 == nil }.count == 29)
    }

    /// A schema of version 10 (its counts, floors and hints in tables of their own)
    /// is migrated in place: the counts carried over with what their log had not
    /// folded, the counters of purged messages included (a recount could not give
    /// them back); the hint kept; the ledger's runs as they were; a mark from
    /// before told anything may have changed; and the tables gone.
    @Test func aVersion10SchemaKeepsItsCountsHintsAndLedger() throws {
        let url = try TestServer.freshURL()
        let store = try TestServer.open(url)
        var records = (0..<20).map { Fixtures.message($0, to: "r\($0 % 3)@x", createdOffset: Int64($0)) }
        _ = try store.add(records)
        for (to, from) in [(Status.sending, Status.queued), (.sent, .sending)] {
            for i in 0..<6 { try records[i].transition(to: to, event: to.rawValue, at: Fixtures.t0) }
            #expect(try store.update(records[0..<6].map { Change($0, expected: from) }) == Array(repeating: true, count: 6))
        }
        #expect(try store.remove(records[0..<4].map { Removal(id: $0.id, statuses: [.sent]) }) == Array(repeating: true, count: 4))
        let counted = try #require(try store.counts(now: Fixtures.t0, excluding: [])).tally
        #expect(counted[.init(.attempts, "sent", "")] == 6, "counters of the 4 purged kept")
        let mark = try store.changeFloor(since: nil).mark
        func leaves(_ s: PostgresStore) throws(MsgError) -> [UInt8] {
            try s.ledgerRead { () throws(MsgError) -> [UInt8] in
                var all: [UInt8] = []
                try s.ledgerRuns(from: 0) { (_, bytes) throws(MsgError) -> Bool in
                    all.append(contentsOf: bytes)
                    return true
                }
                return all
            }
        }
        let ledger = try leaves(store)
        // Back to version 10: the figures in `tallies`, but one still in the log.
        let schema = String(url.split(separator: "=").last!)
        let db = try BlockingConnection(try PostgresAddress(try PluginURL(url)), password: SystemCalls.environment("PGPASSWORD"))
        var kinds: [String] = [], a: [String] = [], b: [String] = [], n: [Int64] = []
        let logged = Tally.records(to: "r1@x", status: "queued")
        var log = Tally()
        log.add(1, to: logged)
        counted.forEach { (key, v) in
            kinds.append(key.kind.rawValue); a.append(key.a); b.append(key.b); n.append(Int64(key == logged ? v - 1 : v))
        }
        var figures = PostgresBindings()
        figures.append(kinds); figures.append(a); figures.append(b); figures.append(n)
        let s = schema
        for sql in ["CREATE TABLE \(s).tallies (kind text NOT NULL, a text NOT NULL, b text NOT NULL, n bigint NOT NULL, PRIMARY KEY (kind, a, b))",
                    "CREATE TABLE \(s).tally_log (seq bigserial PRIMARY KEY, deltas text NOT NULL)",
                    "INSERT INTO \(s).tally_log (deltas) VALUES ('\(log.logText)')",
                    "INSERT INTO \(s).tallies VALUES ('ok', '', '', 1)",
                    "CREATE TABLE \(s).claim_floors (xid bigint NOT NULL, created_at bigint)",
                    "CREATE TABLE \(s).claim_floors_pruned (below bigint NOT NULL)",
                    "CREATE TABLE \(s).claim_hints (kind text NOT NULL PRIMARY KEY, hint text NOT NULL)",
                    "INSERT INTO \(s).claim_hints VALUES ('v1 a kind', 'where it stopped')",
                    "CREATE TABLE \(s).created_minutes (status text NOT NULL, minute bigint NOT NULL, n bigint NOT NULL, PRIMARY KEY (status, minute))",
                    "CREATE TABLE \(s).created_log (status text NOT NULL, minute bigint NOT NULL, n bigint NOT NULL)",
                    "DROP TABLE \(s).kept", "DELETE FROM \(s).commits WHERE count = 0",
                    "DROP INDEX \(s).commits_pending", "DROP INDEX \(s).commits_xid",
                    "ALTER TABLE \(s).commits DROP COLUMN xid, DROP COLUMN effects",
                    "ALTER TABLE \(s).commits RENAME TO ledger_runs", "ALTER SEQUENCE \(s).commits_id_seq RENAME TO ledger_runs_id_seq",
                    "ALTER INDEX \(s).commits_first RENAME TO ledger_runs_first",
                    "CREATE INDEX ledger_runs_pending ON \(s).ledger_runs (id) WHERE first IS NULL",
                    "UPDATE \(s).msg_schema SET version = 10"] {
            try db.query(PostgresQuery(unsafeSQL: sql), "test")
        }
        try db.query(PostgresQuery(unsafeSQL: "INSERT INTO \(s).tallies SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[])",
                                   binds: figures), "test")
        #expect(throws: MsgError.self) { try TestServer.open(url, access: .read) }
        let migrated = try TestServer.open(url)
        #expect(try migrated.counts(now: Fixtures.t0, excluding: [])?.tally == counted)
        #expect(try migrated.scanHint("v1 a kind") == "where it stopped")
        #expect(try migrated.changeFloor(since: mark).floor == .all, "a mark from before")
        #expect(try leaves(migrated) == ledger, "the ledger's runs as they were")
        let gone = try db.query(PostgresQuery(unsafeSQL: """
            SELECT count(*)::int4 FROM unnest(ARRAY[\(PostgresJournal.replaced.map { "'\(s).\($0)'" }.joined(separator: ", "))]) AS t(name)
            WHERE to_regclass(t.name) IS NOT NULL
            """), "test")
        #expect(try #require(gone.first).decode(Int32.self) == 0, "the tables replaced are gone")
        // It takes a write: counted, and one leaf more.
        _ = try migrated.add([Fixtures.message(99, to: "r1@x")])
        var more = counted
        more.add(1, to: logged)
        #expect(try migrated.counts(now: Fixtures.t0, excluding: [])?.tally == more)
        #expect(try leaves(migrated).count > ledger.count)
    }

    /// Past 512 journal rows the writer that appends the last folds them into the
    /// fold, after its transaction's commit; the counts read the same before and
    /// after, and the rows the fold has not seen are those committed after it, even
    /// with transactions of other tests open on the server.
    @Test func theLogIsFoldedAndTheCountsStay() throws {
        let url = try TestServer.freshURL()
        let store = try TestServer.open(url)
        var m = Fixtures.message(1, to: "fold@x")
        _ = try store.add([m])
        for i in 0..<600 {
            let expected = m.status
            try m.transition(to: i % 2 == 0 ? .held : .queued, event: "toggled", at: Fixtures.t0)
            #expect(try store.update([Change(m, expected: expected)]) == [true])
        }
        let schema = String(url.split(separator: "=").last!)
        let db = try BlockingConnection(try PostgresAddress(try PluginURL(url)), password: SystemCalls.environment("PGPASSWORD"))
        let kept = try db.query(PostgresQuery(unsafeSQL: "SELECT value FROM \(schema).kept WHERE name = 'fold'"), "test")
        let value = try #require(kept.first).decode(ByteBuffer.self)
        let fold = try #require(value.withUnsafeReadableBytes { CommitFold(snapshot: $0) })
        let rows = try db.query(PostgresQuery(unsafeSQL: """
            SELECT count(*)::int4 FROM (SELECT convert_from(value, 'UTF8')::pg_snapshot AS seen FROM \(schema).kept WHERE name = 'folded') AS f
            JOIN \(schema).commits AS c ON NOT pg_visible_in_snapshot(c.xid::text::xid8, f.seen)
            """), "test")
        let left: Int32 = try #require(rows.first).decode(Int32.self)
        #expect(left == 91, "rows left after the fold at the 512th (603 appended, the schema's 2 first)")
        #expect(fold.tally[Tally.records(to: "fold@x", status: "queued")] + fold.tally[Tally.records(to: "fold@x", status: "held")] == 1)
        let counts = try #require(try store.counts(now: Fixtures.t0, excluding: []))
        var expected = Tally()
        expected.added(m)
        #expect(counts.tally == expected)
        #expect(counts.tally[.init(.messages, "fold@x", "queued")] == 1)
        // The counts by creation minute were folded with it, and still agree.
        let edge = Timestamp(milliseconds: Timestamp.now().milliseconds - 7 * 86_400_000)
        let byAge = try #require(try store.capabilities.journal?.created(after: [edge]))
        #expect(byAge.filter { $0.value != [0, 0] } == ["queued": [m.createdAt > edge ? 1 : 0, 1]], "\(byAge)")
        #expect(fold.created.count <= 1, "folded into one minute at most, the empty ones dropped: \(fold.created)")
    }

    /// A reader is told what changed at or above its mark, and that anything may
    /// have when more than 4,096 rows are (``JournalStore/floorRows``).
    @Test func aMarkFarBehindGetsAll() throws {
        let url = try TestServer.freshURL()
        let opened = try TestServer.open(url)
        let store = try #require(opened.capabilities.journal)
        let schema = String(url.split(separator: "=").last!)
        let db = try BlockingConnection(try PostgresAddress(try PluginURL(url)), password: SystemCalls.environment("PGPASSWORD"))
        let before = try store.changeFloor(since: nil).mark
        #expect(try store.changeFloor(since: before).floor == ChangeFloor.Floor.none, "nothing since")
        let m = Fixtures.message(1, to: "a@x")
        _ = try opened.add([m])
        #expect(try store.changeFloor(since: before).floor == .from(ClaimPosition(createdAt: m.createdAt, id: "")), "the add is named")
        // Rows of a transaction long gone (id 7), of no effects.
        try db.query(PostgresQuery(unsafeSQL: """
            INSERT INTO \(schema).commits (count, leaves, xid, effects) SELECT 0, ''::bytea, 7, ''::bytea FROM generate_series(1, 4097)
            """), "test")
        #expect(try store.changeFloor(since: 7).floor == .all, "a mark 4,098 rows behind")
        #expect(try store.changeFloor(since: before).floor == .from(ClaimPosition(createdAt: m.createdAt, id: "")))
    }

    @Test func tlsIsUsedWhenTheURLAsksForIt() throws {
        guard let tlsURL = SystemCalls.environment("MSG_TEST_POSTGRES_TLS") else {
            Issue.record("MSG_TEST_POSTGRES_TLS is not set: run scripts/test")
            return
        }
        // pg_hba.conf lets msg_tls in over TLS only.
        let store = try TestServer.open(try TestServer.freshURL(tlsURL) + "&sslmode=require")
        _ = try store.add([Fixtures.message(1)])
        #expect(try store.count(Query()) == 1)
        let plain = try TestServer.freshURL(tlsURL) + "&sslmode=disable"
        do {
            _ = try TestServer.open(plain)
            Issue.record("connected without TLS")
        } catch {
            #expect(error.code == .config && error.message.contains("no encryption"), "\(error.message)")
        }
    }

    @Test func aWrongPasswordIsAConfigurationError() throws {
        let address = try PostgresAddress(try PluginURL(try TestServer.url()))
        do {
            _ = try BlockingConnection(address, password: "wrong")
            Issue.record("logged in with a wrong password")
        } catch {
            #expect(error.code == .config && error.message.contains("password authentication failed"), "\(error.message)")
            #expect(error.message.contains(address.display), "\(error.message)")
        }
    }

    /// Unreachable is a temporary failure (75: try again), not damage (74) (#34).
    @Test func aServerThatIsNotThereIsATemporaryFailure() throws {
        // A port nothing listens on: bind one, learn it, close it.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        close(fd)
        let port = UInt16(bigEndian: addr.sin_port)
        do {
            _ = try TestServer.open("postgres://msg@127.0.0.1:\(port)/q")
            Issue.record("connected to a closed port")
        } catch {
            #expect(error.code == .unreachable && error.code.exitCode == 75, "\(error.code)")
            #expect(error.message.contains("127.0.0.1:\(port)"), "\(error.message)")
        }
    }

    @Test func aMissingDatabaseIsAConfigurationError() throws {
        let base = try TestServer.url()
        let other = base[..<base.lastIndex(of: "/")!] + "/nosuchdb"
        do {
            _ = try TestServer.open(String(other))
            Issue.record("opened a missing database")
        } catch {
            #expect(error.code == .config && error.message.contains("nosuchdb"), "\(error.message)")
        }
    }
}
