#if canImport(Glibc)
import Glibc
#endif
import MsgKit
import MsgSupport
import MsgKitTesting
import Testing

/// A commit of the JSON store is stored whole or not at all (msg-record(5), rule 3):
/// the first line of a commit of several changes says how many lines it has, and a
/// commit cut short by a crash is set aside whole by the next writer.
@Suite struct JSONCommitTests {
    /// The lines of a commit (each with its newline), as found after `before` bytes.
    private func lines(_ path: String, after before: Int) throws -> [[UInt8]] {
        try readFile(path)[before...].split(separator: 0x0A).map { Array($0) + [0x0A] }
    }

    private func cut(_ path: String, to size: Int) {
        #expect(truncate(path, off_t(size)) == 0)
    }

    private func leaves(_ store: any Store) throws -> Int {
        try #require(store.capabilities.ledger).ledgerSize()
    }

    /// Three records added in one call, then cut after any of their six lines or
    /// inside one: a reader takes none of them, and the next writer sets all that
    /// was written of them aside, as it was.
    @Test(arguments: [(1, false), (2, false), (3, true), (4, false), (5, false), (5, true), (0, true)])
    func aBatchCutShortIsSetAsideWhole(keptLines: Int, halfOfTheNext: Bool) throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.json"
        _ = try loader.openStore("json:\(path)").add([Fixtures.message(1)])
        let before = try readFile(path).count
        _ = try loader.openStore("json:\(path)").add([Fixtures.message(2), Fixtures.message(3), Fixtures.message(4)])
        let commit = try lines(path, after: before)
        #expect(commit.count == 6 && String(decoding: commit[0], as: UTF8.self).contains(#""commit":6,"#), "its first line says its six lines")
        var written = commit.prefix(keptLines).flatMap { $0 }
        if halfOfTheNext { written += commit[keptLines].prefix(commit[keptLines].count / 2) }
        cut(path, to: before + written.count)

        let reader = try loader.openStore("json:\(path)", access: .read)
        #expect(try reader.count(Query()) == 1, "none of the batch")
        #expect(try leaves(reader) == 1, "nor its leaves")
        #expect(listDirectory(dir).filter { $0.contains(".torn-") }.isEmpty, "a reader changes nothing")

        _ = try loader.openStore("json:\(path)").add([Fixtures.message(5)])
        let kept = listDirectory(dir).filter { $0.hasPrefix("q.json.torn-") }
        #expect(kept.count == 1, "\(listDirectory(dir))")
        #expect(try kept.first.map { try readFile("\(dir)/\($0)") } == written, "what was written of the batch is kept as it was")
        let again = try loader.openStore("json:\(path)", access: .read)
        var ids: [String] = []
        try again.list(Query()) { (r) throws(MsgError) in ids.append(r.message.id); return true }
        #expect(ids == [Fixtures.message(1).id, Fixtures.message(5).id])
        #expect(try leaves(again) == 2)
    }

    /// A batch whole but for its last newline (a file restored by a tool that strips
    /// it) was acknowledged: it is kept, and the next writer adds the newline.
    @Test func aWholeBatchWithoutItsLastNewlineIsKept() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.json"
        _ = try loader.openStore("json:\(path)").add([Fixtures.message(1), Fixtures.message(2), Fixtures.message(3)])
        cut(path, to: try readFile(path).count - 1)
        let reader = try loader.openStore("json:\(path)", access: .read)
        #expect(try reader.count(Query()) == 3, "a reader sees it")
        _ = try loader.openStore("json:\(path)").add([Fixtures.message(4)])
        #expect(try reader.count(Query()) == 4, "the reader, after the writer's append")
        #expect(try leaves(reader) == 4)
        #expect(listDirectory(dir).filter { $0.contains(".torn-") || $0.contains(".corrupt-") }.isEmpty)
        #expect(try readFile(path).filter { $0 == 0x0A }.count == 8)
    }

    /// Destination states written alone in one commit start with a `$ledger` line of
    /// no leaves that counts them: cut short, none is taken.
    @Test(arguments: [false, true]) func statesWrittenAloneAreOneCommitToo(cutShort: Bool) throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.json"
        _ = try loader.openStore("json:\(path)").add([Fixtures.message(1)])
        let before = try readFile(path).count
        try loader.openStore("json:\(path)").claimSession { (session) throws(MsgError) in
            _ = try session.store([], states: ["a@example.com": "one", "b@example.com": "two"])
        }
        let commit = try lines(path, after: before)
        #expect(commit.count == 3 && String(decoding: commit[0], as: UTF8.self) == "{\"$ledger\":\"\",\"commit\":3}\n", "\(commit.map { String(decoding: $0, as: UTF8.self) })")
        if cutShort { cut(path, to: before + commit[0].count + commit[1].count) }
        let reader = try loader.openStore("json:\(path)", access: .read)
        let states = try reader.destinationStates(nil)
        #expect(states == (cutShort ? [:] : ["a@example.com": "one", "b@example.com": "two"]))
        #expect(try leaves(reader) == 1, "the line of no leaves adds none")
    }

    /// A file written by a msg before the count (no `"commit"`) reads as it did: a
    /// batch cut short keeps its whole pairs.
    @Test func aBatchWrittenBeforeTheCountKeepsItsWholePairs() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.json"
        _ = try loader.openStore("json:\(path)").add([Fixtures.message(1), Fixtures.message(2), Fixtures.message(3)])
        let text = String(decoding: try readFile(path), as: UTF8.self)
        let older = text.replacingOccurrences(of: #","commit":6"#, with: "")
        #expect(older != text)
        let pairs = older.split(separator: "\n").prefix(4).map { $0 + "\n" }.joined()
        cut(path, to: 0)
        try append(path, Array(pairs.utf8))
        let reader = try loader.openStore("json:\(path)", access: .read)
        #expect(try reader.count(Query()) == 2)
        #expect(try leaves(reader) == 2)
    }

    /// A count that is not one is a damaged line: the file is set aside, never emptied.
    @Test func aCountThatIsNotOneIsDamage() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.json"
        _ = try loader.openStore("json:\(path)").add([Fixtures.message(1), Fixtures.message(2)])
        let text = String(decoding: try readFile(path), as: UTF8.self)
        cut(path, to: 0)
        try append(path, Array(text.replacingOccurrences(of: #""commit":4"#, with: #""commit":"four""#).utf8))
        #expect(throws: MsgError.self) { try loader.openStore("json:\(path)").add([Fixtures.message(3)]) }
        let aside = try #require(listDirectory(dir).first { $0.hasPrefix("q.json.corrupt-") })
        let kept = String(decoding: try readFile("\(dir)/\(aside)"), as: UTF8.self)
        #expect(kept.contains(Fixtures.message(1).id) && kept.contains(Fixtures.message(2).id), "the file set aside keeps both records")
    }
}
