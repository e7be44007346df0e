#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MsgKit
import MsgSupport
import MsgKitTesting
import Testing

/// A commit of the JSON store is stored whole or not at all (msg-record(5), rule 3):
/// its first line, the journal line, says how many lines it has, and a commit cut
/// short by a crash is set aside whole by the next writer.
@Suite struct JSONCommitTests {
    /// The lines of a commit (each with its newline), as found after `before` bytes.
    private func lines(_ path: String, after before: Int) throws -> [[UInt8]] {
        try readFile(path)[before...].split(separator: 0x0A).map { Array($0) + [0x0A] }
    }

    private func cut(_ path: String, to size: Int) {
        #expect(truncate(path, off_t(size)) == 0)
    }

    private func leaves(_ store: any Store) throws -> Int {
        try #require(store.capabilities.journal).ledgerSize()
    }

    /// Three records added in one call, then cut after any of their four lines or
    /// inside one: a reader takes none of them, and the next writer sets all that
    /// was written of them aside, as it was.
    @Test(arguments: [(1, false), (2, false), (2, true), (3, false), (3, true), (0, true)])
    func aBatchCutShortIsSetAsideWhole(keptLines: Int, halfOfTheNext: Bool) throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.json"
        _ = try loader.openStore("json:\(path)").add([Fixtures.message(1)])
        let before = try readFile(path).count
        _ = try loader.openStore("json:\(path)").add([Fixtures.message(2), Fixtures.message(3), Fixtures.message(4)])
        let commit = try lines(path, after: before)
        #expect(commit.count == 4 && String(decoding: commit[0], as: UTF8.self).contains(#""commit":4,"#), "its first line says its four lines")
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
        #expect(try readFile(path).filter { $0 == 0x0A }.count == 6)
    }

    /// Destination states written alone in one commit start with a journal line of
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
        let first = String(decoding: commit[0], as: UTF8.self)
        #expect(commit.count == 3 && first.hasPrefix(#"{"$ledger":"","commit":3,"effects":"#) && first.hasSuffix(#","rows":[]}"# + "\n"), "\(first)")
        if cutShort { cut(path, to: before + commit[0].count + commit[1].count) }
        let reader = try loader.openStore("json:\(path)", access: .read)
        let states = try reader.destinationStates(nil)
        #expect(states == (cutShort ? [:] : ["a@example.com": "one", "b@example.com": "two"]))
        #expect(try leaves(reader) == 1, "the line of no leaves adds none")
    }

    /// A file of the lines an older msg wrote (Tests/Fixtures/json9, its `made.sh`
    /// says how) reads as it did: its last commit of several, counted on its first
    /// line, is taken whole or not at all.
    @Test(arguments: [1, 2, 3]) func anOlderCommitCutShortIsNotTaken(kept: Int) throws {
        let dir = temporaryDirectory()
        let fixture = try readFile(URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../Fixtures/json9/queue.json").path)
        let lines = fixture.split(separator: 0x0A).map { Array($0) + [0x0A] }
        let at = try #require(lines.lastIndex { String(decoding: $0, as: UTF8.self).contains(#""commit":4,"id":"#) })
        func read(_ lines: ArraySlice<[UInt8]>) throws -> (Int, Int, Int?) {
            let path = "\(dir)/q\(lines.count).json"
            close(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600))
            try append(path, lines.flatMap { $0 })
            let store = try loader.openStore("json:\(path)", access: .read)
            return (try store.count(Query(statuses: [.sending])), try leaves(store), try store.capabilities.journal?.counts(now: .now(), excluding: [])?.tally.figures.count)
        }
        let before = try read(lines[..<at]), cut = try read(lines[..<(at + kept)]), whole = try read(lines[..<(at + 4)])
        #expect(before.0 == 0 && whole.0 == 2, "the commit, a claim, puts two in flight: \(before) \(whole)")
        #expect(whole.1 == before.1 + 2)
        #expect(cut.0 == before.0 && cut.1 == before.1, "none of it: \(cut)")
        #expect(before.2 == nil && whole.2 == nil, "an older msg's lines hold no counts: the host reads the records")
    }

    /// A count that is not one is a damaged line: the file is set aside, never emptied.
    @Test func aCountThatIsNotOneIsDamage() throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/q.json"
        _ = try loader.openStore("json:\(path)").add([Fixtures.message(1), Fixtures.message(2)])
        let text = String(decoding: try readFile(path), as: UTF8.self)
        cut(path, to: 0)
        try append(path, Array(text.replacingOccurrences(of: #""commit":3"#, with: #""commit":"three""#).utf8))
        #expect(throws: MsgError.self) { try loader.openStore("json:\(path)").add([Fixtures.message(3)]) }
        let aside = try #require(listDirectory(dir).first { $0.hasPrefix("q.json.corrupt-") })
        let kept = String(decoding: try readFile("\(dir)/\(aside)"), as: UTF8.self)
        #expect(kept.contains(Fixtures.message(1).id) && kept.contains(Fixtures.message(2).id), "the file set aside keeps both records")
    }
}
