#if canImport(Glibc)
import Glibc
#endif
import MsgKit
import MsgKitTesting
import Testing

@Suite struct SQLiteStoreTests {
    @Test func passesStoreConformance() throws {
        let dir = temporaryDirectory()
        var n = 0
        try StoreConformance.run(freshURL: {
            n += 1
            return "sqlite:\(dir)/\(n)/queue.sqlite"
        }, open: { url in try loader.openStore(url) })
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

    @Test func aFileThatIsNotADatabaseIsMovedAside() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.sqlite"
        let fd = try SystemCalls.open(path, O_WRONLY | O_CREAT, code: .storeIO)
        try SystemCalls.writeAll(fd, Array(repeating: UInt8(ascii: "x"), count: 8192), code: .storeIO, what: path)
        close(fd)
        do {
            _ = try loader.openStore("sqlite:\(path)")
            Issue.record("opened garbage as a store")
        } catch {
            #expect(error.code == .corrupt && error.code.exitCode == 74)
            #expect(error.message.contains("moved to \(path).corrupt-"), "\(error.message)")
            #expect(error.underlying != nil, "the SQLite code is kept underneath")
            #expect(!error.message.contains("SQLite error"), "SQLite's text is not the whole message")
        }
        #expect(listDirectory(dir).contains { $0.hasPrefix("q.sqlite.corrupt-") })
    }

    @Test func aTruncatedDatabaseIsReportedNotEmptied() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.sqlite"
        do {
            let store = try loader.openStore("sqlite:\(path)")
            _ = try store.add((0..<2000).map { Fixtures.message($0) })
        }
        // Fold the WAL into the main file, then cut the file in half.
        _ = try loader.openStore("sqlite:\(path)")
        let whole = try readFile(path)
        #expect(truncate(path, off_t(whole.count / 2)) == 0)
        unlink(path + "-wal")
        unlink(path + "-shm")
        do {
            let store = try loader.openStore("sqlite:\(path)")
            var n = 0
            try store.list(Query()) { _ in n += 1; return true }
            Issue.record("listed \(n) records from a truncated file without an error")
        } catch {
            #expect(error.code == .corrupt)
        }
        let aside = listDirectory(dir).filter { $0.hasPrefix("q.sqlite.corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }
        #expect(aside.count == 1, "\(listDirectory(dir))")
    }

    @Test func aNewerSchemaIsAConfigurationError() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.sqlite"
        _ = try loader.openStore("sqlite:\(path)")
        #expect(system("sqlite3 '\(path)' 'PRAGMA user_version = 99'") == 0)
        do {
            _ = try loader.openStore("sqlite:\(path)")
            Issue.record("opened a newer schema")
        } catch {
            #expect(error.code == .config)
            #expect(error.message.contains("schema version 99"))
        }
    }
}
