#if canImport(Glibc)
import Glibc
#endif
import MsgKit
import MsgSupport
import MsgKitTesting
import Testing

@Suite struct JSONFileStoreTests {
    @Test func passesStoreConformance() throws {
        let dir = temporaryDirectory()
        var n = 0
        try StoreConformance.run(freshURL: {
            n += 1
            // A store's directory is there before it: msg makes none (StoreFile).
            mkdir("\(dir)/\(n)", 0o700)
            return "json:\(dir)/\(n)/queue.json"
        }, open: { url, access in try loader.openStore(url, access: access) })
    }

    @Test func aPluginObjectCastsToTheMsgKitProtocol() throws {
        let store = try loader.openStore("json:\(temporaryDirectory())/q.json")
        #expect(String(describing: type(of: store)).contains("JSONFileStore"))
        let asAny: AnyObject = store
        #expect(asAny is any Store, "the plugin and the test share one MsgKit")
        #expect(PluginRegistry.shared.entries.contains { $0.scheme == "json" && $0.path.hasSuffix("libJSONFileStore.so") })
    }

    @Test func filesAreOwnerOnly() throws {
        let dir = temporaryDirectory()
        let store = try loader.openStore("json:\(dir)/q.json")
        _ = try store.add([Fixtures.message(1)])
        for file in ["q.json", "q.json.lock"] {
            var st = stat()
            #expect(stat("\(dir)/\(file)", &st) == 0)
            #expect(st.st_mode & 0o777 == 0o600, "\(file)")
        }
    }

    @Test func aTornLastLineIsCutOffAndItsBytesKeptAside() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.json"
        _ = try loader.openStore("json:\(path)").add([Fixtures.message(1), Fixtures.message(2)])
        // A crash in the middle of appending record 3.
        let torn = Array(Fixtures.message(3).jsonText().utf8)
        let half = Array(torn.prefix(torn.count / 2))
        try append(path, half)
        let reopened = try loader.openStore("json:\(path)")
        #expect(try reopened.count(Query()) == 2)
        #expect(listDirectory(dir).filter { $0.contains(".torn-") }.isEmpty, "a reader changes nothing")
        _ = try reopened.add([Fixtures.message(4)])
        let again = try loader.openStore("json:\(path)")
        #expect(try again.count(Query()) == 3)
        #expect(try again.get(Fixtures.message(4).id)?.message == Fixtures.message(4))
        let kept = listDirectory(dir).filter { $0.hasPrefix("q.json.torn-") }
        #expect(kept.count == 1, "\(listDirectory(dir))")
        #expect(try kept.first.map { try readFile("\(dir)/\($0)") } == half, "the cut bytes are kept as they were")
    }

    @Test func aWholeRecordWithoutItsNewlineIsKept() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.json"
        _ = try loader.openStore("json:\(path)").add([Fixtures.message(1)])
        // Edited by hand, or restored by a tool that strips the last newline.
        try append(path, Array(Fixtures.message(2).jsonText().utf8))
        let reader = try loader.openStore("json:\(path)", access: .read)
        #expect(try reader.get(Fixtures.message(2).id)?.message == Fixtures.message(2), "a reader sees it")
        let writer = try loader.openStore("json:\(path)")
        _ = try writer.add([Fixtures.message(3)])
        #expect(try reader.count(Query()) == 3, "the reader, after the writer's append")
        let again = try loader.openStore("json:\(path)")
        #expect(try again.count(Query()) == 3)
        #expect(try again.get(Fixtures.message(2).id)?.message == Fixtures.message(2))
        #expect(listDirectory(dir).filter { $0.contains(".torn-") || $0.contains(".corrupt-") }.isEmpty)
        // One record a line; each msg wrote after its journal line, and the first write
        // after the line by hand first keeps the counts made afresh.
        #expect(try readFile(path).filter { $0 == 0x0A }.count == 6)
        let lines = try readFile(path).split(separator: 0x0A).map { String(decoding: $0, as: UTF8.self) }
        #expect(lines[3].hasPrefix(#"{"$ledger":"","kept":"fold","#) && lines[4].contains(#""commit":2,"#), "\(lines)")
        // The one added by hand is in no leaf: `msg ledger verify` names it.
        let ledger = try #require(again.capabilities.journal)
        var lists: [String: [Int]?] = [:]
        try ledger.ledgerMessages { (_, id, list) throws(MsgError) in lists[id] = list; return true }
        #expect(lists[Fixtures.message(2).id] == .some(nil) && lists[Fixtures.message(3).id]??.count == 1, "\(lists)")
    }

    /// Each change is written after its commit's journal line: a crash between the
    /// two leaves a journal line whose change is not there. A reader does not take
    /// it; the next writer sets it aside with what follows, as a torn last line.
    @Test(arguments: [false, true]) func aJournalLineWhoseChangeWasCutOffIsSetAsideWithIt(halfARecord: Bool) throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.json"
        _ = try loader.openStore("json:\(path)").add([Fixtures.message(1), Fixtures.message(2)])
        let lines = try readFile(path).split(separator: 0x0A)
        #expect(lines.count == 3, "a journal line and two records")
        // A third change cut after its journal line (and half its record).
        _ = try loader.openStore("json:\(dir)/other.json").add([Fixtures.message(3)])
        let third = try readFile("\(dir)/other.json").split(separator: 0x0A)
        let cut = Array(third[0]) + [0x0A] + (halfARecord ? Array(third[1].prefix(40)) : [])
        try append(path, cut)
        let reader = try loader.openStore("json:\(path)", access: .read)
        #expect(try reader.count(Query()) == 2)
        #expect(try reader.capabilities.journal?.ledgerSize() == 2, "its leaves are not taken")
        #expect(listDirectory(dir).filter { $0.contains(".torn-") }.isEmpty, "a reader changes nothing")
        _ = try loader.openStore("json:\(path)").add([Fixtures.message(4)])
        let kept = listDirectory(dir).filter { $0.hasPrefix("q.json.torn-") }
        #expect(kept.count == 1, "\(listDirectory(dir))")
        #expect(try kept.first.map { try readFile("\(dir)/\($0)") } == cut, "the cut bytes are kept as they were")
        let again = try loader.openStore("json:\(path)", access: .read)
        let ledger = try #require(again.capabilities.journal)
        var leaves = 0
        try ledger.ledgerRuns(from: 0) { (_, b) throws(MsgError) in
            var at = 0
            while at < b.count, let (_, end) = LedgerLeaf.read(b, at: at) { leaves += 1; at = end }
            return true
        }
        var lists: [[Int]?] = []
        try ledger.ledgerMessages { (_, _, list) throws(MsgError) in lists.append(list); return true }
        let size = try ledger.ledgerSize(), count = try again.count(Query())
        #expect(leaves == 3 && size == 3 && count == 3, "one leaf a message")
        #expect(lists.compactMap { $0 }.flatMap { $0 }.sorted() == [0, 1, 2], "each its own: \(lists)")
    }

    /// A journal line is read alike as msg writes it (read without parsing its
    /// leaves' hex as a JSON string) and reformatted by a tool (read as JSON): the
    /// same leaves, the same lists, the same counts.
    @Test func aLedgerLineReadsAlikeAsWrittenAndReformatted() throws {
        let dir = temporaryDirectory()
        _ = try loader.openStore("json:\(dir)/a.json").add([Fixtures.message(1), Fixtures.message(2)])
        let text = String(decoding: try readFile("\(dir)/a.json"), as: UTF8.self)
        let spaced = text.replacingOccurrences(of: #"{"$ledger":""#, with: #"{ "$ledger" : ""#)
            .replacingOccurrences(of: #","rows":[["#, with: #", "rows": [ ["#)
        #expect(spaced.contains(#""rows": [ ["#))
        close(open("\(dir)/b.json", O_WRONLY | O_CREAT, 0o600))
        try append("\(dir)/b.json", Array(spaced.utf8))
        func read(_ name: String) throws -> ([UInt8], [String]) {
            let ledger = try #require(try loader.openStore("json:\(dir)/\(name)", access: .read).capabilities.journal)
            var bytes: [UInt8] = [], lists: [String] = []
            try ledger.ledgerRuns(from: 0) { (_, b) throws(MsgError) in bytes += Array(b); return true }
            try ledger.ledgerMessages { (_, id, list) throws(MsgError) in lists.append("\(id) \(list ?? [])"); return true }
            return (bytes, lists)
        }
        let (a, b) = (try read("a.json"), try read("b.json"))
        #expect(a.0.count > 0 && a.0 == b.0 && a.1 == b.1 && a.1.count == 2)
        let counts = try ["a.json", "b.json"].map { try loader.openStore("json:\(dir)/\($0)", access: .read).capabilities.journal?.counts(now: .now(), excluding: [])?.tally }
        #expect(counts[0] != nil && counts[0] == counts[1], "\(counts)")
    }

    /// The ledger is carried whole across compaction: the same leaves, each message
    /// its same list, the removed ones kept.
    @Test func compactionKeepsTheLedgerWhole() throws {
        let path = "\(temporaryDirectory())/q.json"
        let store = try loader.openStore("json:\(path)")
        _ = try store.add((0..<30).map { Fixtures.message($0) })
        _ = try store.remove([Removal(id: Fixtures.message(0).id)])
        let ledger = try #require(store.capabilities.journal)
        func snapshot() throws -> (bytes: [UInt8], lists: [String], size: Int) {
            var bytes: [UInt8] = [], lists: [String] = []
            try ledger.ledgerRuns(from: 0) { (_, b) throws(MsgError) in bytes += Array(b); return true }
            try ledger.ledgerMessages { (_, id, list) throws(MsgError) in lists.append("\(id) \(list ?? [])"); return true }
            return (bytes, lists.sorted(), try ledger.ledgerSize())
        }
        var before = try snapshot()
        let linesBefore = try readFile(path).filter { $0 == 0x0A }.count
        for round in 0..<4 {
            for i in 1..<30 {
                var m = try #require(try store.get(Fixtures.message(i).id)).message
                try m.transition(to: .held, event: "held", at: Fixtures.t0.adding(.seconds(Int64(round * 2 + 1))))
                _ = try store.update([Change(m, expected: .queued)])
                try m.transition(to: .queued, event: "released", at: Fixtures.t0.adding(.seconds(Int64(round * 2 + 2))))
                _ = try store.update([Change(m, expected: .held)])
            }
        }
        let after = try snapshot()
        #expect(after.size == before.size + 4 * 2 * 29, "one leaf a change")
        #expect(Array(after.bytes.prefix(before.bytes.count)) == before.bytes, "the leaves before are as they were")
        #expect(try readFile(path).filter { $0 == 0x0A }.count < linesBefore + 4 * 2 * 29 * 2, "the file was compacted")
        // Read afresh from the compacted file: the same ledger.
        before = after
        let fresh = try #require(try loader.openStore("json:\(path)", access: .read).capabilities.journal)
        var bytes: [UInt8] = []
        try fresh.ledgerRuns(from: 0) { (_, b) throws(MsgError) in bytes += Array(b); return true }
        var lists: [String] = []
        try fresh.ledgerMessages { (_, id, list) throws(MsgError) in lists.append("\(id) \(list ?? [])"); return true }
        #expect(bytes == before.bytes && lists.sorted() == before.lists)
        #expect(lists.contains { $0.hasPrefix(Fixtures.message(0).id) }, "the removed one is kept")
    }

    /// A store written before msg kept a ledger in it begins one at its first
    /// write, with a `began` leaf that counts the messages it held; until then
    /// its ledger cannot be read.
    @Test func aStoreFromBeforeTheLedgerBeginsItAtItsFirstWrite() throws {
        let path = "\(temporaryDirectory())/q.json"
        let old = (0..<3).map { Fixtures.message($0) }.map { $0.jsonText() + "\n" }.joined()
        close(open(path, O_WRONLY | O_CREAT, 0o600))
        try append(path, Array(old.utf8))
        let reader = try loader.openStore("json:\(path)", access: .read)
        #expect(throws: MsgError.self) { try reader.capabilities.journal?.ledgerSize() }
        let writer = try loader.openStore("json:\(path)")
        _ = try writer.update([])  // no change: nothing is written
        _ = try writer.claimSession { _ in () }
        let ledger = try #require(writer.capabilities.journal)
        #expect(try ledger.ledgerSize() == 1)
        let run = try #require(try ledger.ledgerRun(holding: 0))
        let began = try run.bytes.withUnsafeBytes { b in try #require(LedgerLeaf.read(b, at: 0)).leaf }
        #expect(began == (try LedgerLeaf.began(3)), "it counts the three messages before it")
        var lists: [[Int]?] = []
        try ledger.ledgerMessages { (_, _, list) throws(MsgError) in lists.append(list); return true }
        #expect(lists == [nil, nil, nil], "those three are in no leaf until they change")
    }

    @Test func aLinkPlantedAtTheLockIsNotFollowed() throws {
        let dir = temporaryDirectory()
        let target = "\(dir)/elsewhere"
        #expect(symlink(target, "\(dir)/q.json.lock") == 0)
        do {
            _ = try loader.openStore("json:\(dir)/q.json")
            Issue.record("opened a lock through a symbolic link")
        } catch {
            #expect(error.code == .storeIO)
        }
        #expect(!SystemCalls.exists(target), "nothing was created at the link's target")
    }

    @Test func aDamagedLineIsMovedAsideNeverEmptied() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.json"
        _ = try loader.openStore("json:\(path)").add([Fixtures.message(1)])
        try append(path, Array("{not json}\n".utf8))
        _ = try loader.openStore("json:\(path)").add([]) // empty batches never touch the file
        let store = try loader.openStore("json:\(path)")
        #expect(throws: MsgError(.corrupt, "")) { try store.count(Query()) }
        do {
            _ = try store.add([Fixtures.message(2)])
            Issue.record("a write to a damaged file succeeded")
        } catch {
            #expect(error.code == .corrupt)
            // Line 1 is the record's `$ledger` line, 2 the record.
            #expect(error.message.contains("line 3") && error.message.contains("moved to"))
        }
        #expect(store.setAside().count == 1, "the store names the file it set aside")
        let aside = try #require(listDirectory(dir).first { $0.hasPrefix("q.json.corrupt-") })
        let kept = try String(decoding: readFile("\(dir)/\(aside)"), as: UTF8.self)
        #expect(kept.contains(Fixtures.message(1).id), "the damaged file keeps every record")
    }

    @Test func twoHandlesSeeEachOthersWritesAcrossCompaction() throws {
        let path = "\(temporaryDirectory())/q.json"
        let a = try loader.openStore("json:\(path)")
        let b = try loader.openStore("json:\(path)")
        _ = try a.add((0..<40).map { Fixtures.message($0) })
        #expect(try b.count(Query()) == 40)
        // Enough rewrites through b to compact (replacing the file's inode)...
        for _ in 0..<3 {
            for i in 0..<40 {
                var m = try #require(try b.get(Fixtures.message(i).id)).message
                m.attempts += 1
                _ = try b.update([Change(m, expected: .queued)])
            }
        }
        // ...then a writes again: it must append to the new file, not the old inode.
        _ = try a.add([Fixtures.message(100)])
        let c = try loader.openStore("json:\(path)")
        #expect(try c.count(Query()) == 41)
        #expect(try c.get(Fixtures.message(7).id)?.message.attempts == 3)
        let lines = try readFile(path).filter { $0 == 0x0A }.count
        #expect(lines < 41 * 3, "the file was compacted (\(lines) lines)")
    }
}

func append(_ path: String, _ bytes: [UInt8]) throws {
    let fd = open(path, O_WRONLY | O_APPEND)
    defer { close(fd) }
    try SystemCalls.writeAll(fd, bytes, code: .storeIO, what: path)
}

func readFile(_ path: String) throws -> [UInt8] {
    let fd = try SystemCalls.open(path, O_RDONLY, code: .storeIO)
    defer { close(fd) }
    return try SystemCalls.readToEnd(fd, code: .storeIO, what: path)
}

func listDirectory(_ dir: String) -> [String] {
    guard let d = opendir(dir) else { return [] }
    defer { closedir(d) }
    var names: [String] = []
    while let e = readdir(d) {
        names.append(withUnsafePointer(to: e.pointee.d_name) { $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) } })
    }
    return names
}
