#if canImport(Glibc)
import Glibc
#endif
import MsgKit
import MsgSupport
import MsgKitTesting
import Testing

@Suite struct SQLiteStoreTests {
    @Test func passesStoreConformance() throws {
        let dir = temporaryDirectory()
        var n = 0
        try StoreConformance.run(freshURL: {
            n += 1
            // A store's directory is there before it: msg makes none (StoreFile).
            mkdir("\(dir)/\(n)", 0o700)
            return "sqlite:\(dir)/\(n)/queue.sqlite"
        }, open: { url, access in try loader.openStore(url, access: access) })
    }

    @Test func filesAreOwnerOnlyAndTheJournalIsWAL() throws {
        let dir = temporaryDirectory()
        let store = try loader.openStore("sqlite:\(dir)/q.sqlite")
        _ = try store.add([Fixtures.message(1)])
        for file in ["q.sqlite", "q.sqlite-wal"] {
            var st = stat()
            #expect(stat("\(dir)/\(file)", &st) == 0, "\(file) exists (WAL mode)")
            #expect(st.st_mode & 0o777 == 0o600, "\(file)")
        }
    }

    @Test func aFileThatIsNotADatabaseIsRefusedAndLeftAsItIs() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/notes.txt"
        let text = Array(repeating: UInt8(ascii: "x"), count: 8192)
        let fd = try SystemCalls.open(path, O_WRONLY | O_CREAT, code: .storeIO)
        try SystemCalls.writeAll(fd, text, code: .storeIO, what: path)
        close(fd)
        for access in [StoreAccess.read, .write] {
            do {
                _ = try loader.openStore("sqlite:\(path)", access: access)
                Issue.record("opened a text file as a store")
            } catch {
                #expect(error.code == .config, "\(error.message)")
                #expect(error.message.contains("not a SQLite database"), "\(error.message)")
            }
        }
        #expect(listDirectory(dir).sorted() == [".", "..", "notes.txt"])
        #expect(try readFile(path) == text)
    }

    @Test func anotherApplicationsDatabaseIsLeftAlone() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/app.db"
        #expect(try TestProcess.sh("sqlite3 '\(path)' 'CREATE TABLE notes(t TEXT); INSERT INTO notes VALUES (1)'").status == 0)
        let before = try readFile(path)
        for access in [StoreAccess.read, .write] {
            do {
                _ = try loader.openStore("sqlite:\(path)", access: access)
                Issue.record("opened another application's database as a store")
            } catch {
                #expect(error.code == .config, "\(error.message)")
                #expect(error.message.contains("not a msg store"), "\(error.message)")
            }
        }
        #expect(try readFile(path) == before)
    }

    @Test func readingNeverCreatesAStoreOrItsDirectory() throws {
        let dir = temporaryDirectory()
        do {
            _ = try loader.openStore("sqlite:\(dir)/typo/q.sqlite", access: .read)
            Issue.record("opened a store that does not exist")
        } catch {
            #expect(error.code == .storeIO)
            #expect(error.message.contains("there is no store at \(dir)/typo/q.sqlite"), "\(error.message)")
        }
        #expect(listDirectory(dir).sorted() == [".", ".."])
    }

    /// Two processes open one damaged store. The first sets it aside and a new store
    /// is made and written in its place; then the second finds the old file damaged.
    /// It must not move the new store, nor delete its journal when it closes.
    @Test func aDamagedStoreFoundTwiceIsSetAsideOnce() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.sqlite"
        try makeDamagedStore(path)
        var first: (any Store)? = try loader.openStore("sqlite:\(path)")
        var second: (any Store)? = try loader.openStore("sqlite:\(path)")
        #expect(throws: MsgError(.corrupt, "")) { try first?.count(Query()) }
        first = nil
        #expect(try asideFiles(dir).count == 1)
        let fresh = try loader.openStore("sqlite:\(path)")
        let acknowledged = (0..<10).map { Fixtures.message($0) }
        #expect(try fresh.add(acknowledged).allSatisfy(\.inserted))
        do {
            _ = try second?.count(Query())
            Issue.record("the second handle read the damaged file without an error")
        } catch {
            #expect(error.code == .corrupt)
            #expect(error.message.contains("set it aside already"), "\(error.message)")
        }
        second = nil
        #expect(try asideFiles(dir).count == 1, "the new store stayed where it is: \(listDirectory(dir))")
        #expect(SystemCalls.exists(path + "-wal"), "the new store's journal is still there")
        let reader = try loader.openStore("sqlite:\(path)", access: .read)
        for m in acknowledged { #expect(try reader.get(m.id) != nil, "every acknowledged record is in the queue") }
        #expect(reader.setAside().count == 1)
        _ = fresh
    }

    @Test func aBatchStoredIntoAFileSetAsideMeanwhileIsNotAcknowledged() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.sqlite"
        let store = try loader.openStore("sqlite:\(path)")
        _ = try store.add([Fixtures.message(1)])
        // Another process sets the file aside while this one still has it open.
        #expect(rename(path, path + ".corrupt-x") == 0)
        do {
            _ = try store.add([Fixtures.message(2)])
            Issue.record("a batch that did not go into the queue was acknowledged")
        } catch {
            #expect(error.code == .storeIO)
            #expect(error.message.contains("not the queue; add it again"), "\(error.message)")
        }
    }

    @Test func aDamagedStoreIsSetAsideOnlyByACommandThatWrites() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.sqlite"
        try makeDamagedStore(path)
        do {
            let reader = try loader.openStore("sqlite:\(path)", access: .read)
            _ = try reader.count(Query())
            Issue.record("counted a damaged store")
        } catch {
            #expect(error.code == .corrupt)
            #expect(error.message.contains("the next msg command that writes"), "\(error.message)")
        }
        #expect(try asideFiles(dir).isEmpty)
        do {
            _ = try loader.openStore("sqlite:\(path)").count(Query())
            Issue.record("counted a damaged store")
        } catch {
            #expect(error.message.contains("moved to \(path).corrupt-2"), "a readable UTC time: \(error.message)")
        }
        #expect(try asideFiles(dir).count == 1)
    }

    @Test func aTruncatedDatabaseIsReportedNotEmptied() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.sqlite"
        try makeDamagedStore(path, truncated: true)
        do {
            let store = try loader.openStore("sqlite:\(path)")
            var n = 0
            try store.list(Query()) { _ in n += 1; return true }
            Issue.record("listed \(n) records from a truncated file without an error")
        } catch {
            #expect(error.code == .corrupt)
            #expect(error.underlying != nil, "the SQLite code is kept underneath")
            #expect(!error.message.contains("SQLite error"), "SQLite's text is not the whole message")
        }
        #expect(try asideFiles(dir).count == 1, "\(listDirectory(dir))")
    }

    /// A store of 2,000 records whose file is then cut in half (found at open), or
    /// whose middle half is overwritten (found when the records are read).
    private func makeDamagedStore(_ path: String, truncated: Bool = false) throws {
        do {
            let store = try loader.openStore("sqlite:\(path)")
            _ = try store.add((0..<2000).map { Fixtures.message($0) })
        }
        // Fold the WAL into the main file (the last connection to close does), then damage it.
        _ = try loader.openStore("sqlite:\(path)")
        let whole = try readFile(path)
        if truncated {
            #expect(truncate(path, off_t(whole.count / 2)) == 0)
        } else {
            let fd = try SystemCalls.open(path, O_WRONLY, code: .storeIO)
            defer { close(fd) }
            let garbage = [UInt8](repeating: 0x55, count: whole.count / 2)
            #expect(garbage.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(whole.count / 4)) } == garbage.count)
        }
        unlink(path + "-wal")
        unlink(path + "-shm")
    }

    private func asideFiles(_ dir: String) throws -> [String] {
        listDirectory(dir).filter { $0.hasPrefix("q.sqlite.corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }
    }

    @Test func aNewerSchemaIsAConfigurationError() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.sqlite"
        _ = try loader.openStore("sqlite:\(path)")
        #expect(try TestProcess.sh("sqlite3 '\(path)' 'PRAGMA user_version = 99'").status == 0)
        do {
            _ = try loader.openStore("sqlite:\(path)")
            Issue.record("opened a newer schema")
        } catch {
            #expect(error.code == .config)
            #expect(error.message.contains("schema version 99"))
        }
    }

    /// One journal row a commit and nothing else beside the rows (schema 10): a new
    /// store has six tables; an add and a claim that writes a state append one row
    /// of `commits` each, and the floors since a mark are read from those rows.
    @Test func aCommitWritesOneJournalRow() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.sqlite"
        let opened = try loader.openStore("sqlite:\(path)")
        let floors = try #require(opened.capabilities.journal)
        let query = { (sql: String) throws -> String in
            var out = try TestProcess.sh("sqlite3 '\(path)' \"\(sql)\"").text
            while out.last == "\n" { out.removeLast() }
            return out
        }
        #expect(try query("SELECT count(*) FROM sqlite_master WHERE type = 'table'") == "6")
        let rows = try query("SELECT count(*) FROM commits")
        let mark = try floors.changeFloor(since: nil).mark
        let first = Fixtures.message(1, createdOffset: 5)
        _ = try opened.add([Fixtures.message(2, createdOffset: 9), first])
        #expect(try query("SELECT count(*) FROM commits") == String(Int(rows)! + 1))
        #expect(try floors.changeFloor(since: mark).floor == .from(ClaimPosition(createdAt: first.createdAt, id: "")))
        let later = try floors.changeFloor(since: nil).mark
        #expect(try floors.changeFloor(since: later).floor == ChangeFloor.Floor.none)
        _ = try opened.claimSession { (session) throws(MsgError) in try session.store([], states: ["k": "paused"]) }
        #expect(try query("SELECT count(*) FROM commits") == String(Int(rows)! + 2))
        #expect(try floors.changeFloor(since: later).floor == .all, "a state written: anything may have changed")
        #expect(try floors.changeFloor(since: later + 5).floor == .all, "a mark ahead of the store's")
    }

    /// A mark more than 4,096 rows behind is told anything may have changed, as
    /// schema 9 forgot older floors; up to there the rows are read.
    @Test func aMarkFarBehindGetsAll() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.sqlite"
        let opened = try loader.openStore("sqlite:\(path)")
        let floors = try #require(opened.capabilities.journal)
        _ = try opened.add([Fixtures.message(1)])
        let mark = try floors.changeFloor(since: nil).mark
        // Rows that wrote nothing, as if other processes committed: 4,096, then one more.
        func rows(_ n: Int) throws {
            #expect(try TestProcess.sh("""
                sqlite3 '\(path)' "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(n)) \
                INSERT INTO commits (first, count, effects) SELECT (SELECT first + count FROM commits ORDER BY seq DESC LIMIT 1), 0, X'010000000000' FROM n"
                """).status == 0)
        }
        try rows(4096)
        #expect(try floors.changeFloor(since: mark) == ChangeFloor(mark: mark + 4096, floor: .none))
        try rows(1)
        #expect(try floors.changeFloor(since: mark) == ChangeFloor(mark: mark + 4097, floor: .all))
        #expect(try opened.add([Fixtures.message(2)]).map(\.inserted) == [true], "the ledger's numbering goes on after them")
    }
}
