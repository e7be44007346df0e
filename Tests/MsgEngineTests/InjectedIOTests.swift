#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MsgEngine
import MsgKit
import MsgSupport
import MsgKitTesting
import Synchronization
import Testing

/// A reporter that keeps what it was told.
final class Lines: Sendable {
    private let kept = Mutex<[String]>([])
    var all: [String] { kept.withLock { $0 } }
    var reporter: Reporter { Reporter { line in self.kept.withLock { $0.append(line) } } }
}

/// The engine reads, writes and speaks only through what it is given: these run
/// in-process, with descriptors and a reporter of the test's own.
@Suite struct InjectedIOTests {
    let loader = PluginLoader()

    /// A pipe holding `text`, read end returned (the write end is closed).
    func input(_ text: String) throws -> Int32 {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        try SystemCalls.writeAll(fds[1], Array(text.utf8), code: .storeIO, what: "pipe")
        close(fds[1])
        return fds[0]
    }

    @Test func composeReadsItsInputAndReportsABadDraftByLine() throws {
        let dir = temporaryDirectory()
        let store = try loader.openStore("json:\(dir)/q.json")
        let out = open("\(dir)/out", O_WRONLY | O_CREAT, 0o600)
        let lines = Lines()
        let drafts = try input("{\"to\":\"bob\",\"body\":\"a\"}\n{\"to\":\"\"}\n{\"to\":\"eve\",\"body\":\"b\"}\n")
        let composer = Composer(drafts: Drafts(), store: store, onError: .skip,
                                console: Console(input: drafts, output: out, error: -1, reporter: lines.reporter))
        #expect(try composer.run(to: nil, body: nil) == 65)
        close(out)
        #expect(lines.all == [#"line 2: field "to" must not be empty"#])
        let echoed = try String(contentsOfFile: "\(dir)/out", encoding: .utf8).split(separator: "\n")
        #expect(try echoed.count == 2 && store.count(Query()) == 2)
    }

    @Test func queueOperationsReportEachIdTheyCouldNotChange() throws {
        let store = try loader.openStore("json:\(temporaryDirectory())/q.json")
        _ = try store.add([Fixtures.message(1)])
        let lines = Lines()
        let missing = "01890a5d-ac96-774b-bcce-b302099a8057"
        let outcome = try QueueOperations(store: store, now: Fixtures.t0, reporter: lines.reporter)
            .hold([Fixtures.message(1).id, missing])
        #expect(outcome.changed.map(\.id) == [Fixtures.message(1).id] && outcome.problems == 1)
        #expect(lines.all == ["\(missing): no such message"])
    }

    @Test func idsOnInputAreReadFromTheGivenDescriptor() throws {
        let lines = Lines()
        var reader = NDJSONReader(fd: try input("\(Fixtures.message(1).id)\nnot-an-id\n"))
        let targets = try TargetReader.read(&reader, reporter: lines.reporter)
        #expect(targets.ids == [Fixtures.message(1).id] && targets.badLines == 1)
        #expect(lines.all == ["line 2: 'not-an-id' is not a message id (a lower-case UUID)"])
    }

    /// A flush writes its records to the console's output and says what it has to
    /// say to the console's reporter: the breaker that opened, the destination held.
    @Test func aFlushWritesAndSpeaksThroughItsConsole() throws {
        let dir = temporaryDirectory()
        let store = try loader.openStore("sqlite:\(dir)/q.sqlite")
        _ = try store.add((0..<8).map { Fixtures.message($0, to: "down", createdOffset: Int64($0)) })
        let out = open("\(dir)/out", O_WRONLY | O_CREAT, 0o600)
        let lines = Lines()
        var rules = DeliveryRules()
        rules.breakerThreshold = 2
        var options = Flusher.Options()
        options.rules = rules
        let flusher = Flusher(store: store, transport: try loader.openTransport("stdout:?fail=1&fd=\(out)"), policy: RetryPolicy(),
                              options: options, faults: try FaultPoints(environment: nil),
                              console: Console(input: -1, output: out, error: -1, reporter: lines.reporter),
                              stop: StopRequest(watchesSignals: false))
        let summary = try flusher.run()
        summary.reportHolds(to: lines.reporter)
        close(out)
        let printed = try String(contentsOfFile: "\(dir)/out", encoding: .utf8).split(separator: "\n")
        #expect(printed.filter { $0.contains("\"status\":\"failed\"") }.count == 2, "the two attempts' records: \(printed)")
        #expect(lines.all.contains { $0.hasPrefix("destination down: circuit open for 30s after 2 failures") }, "\(lines.all)")
        #expect(lines.all.contains { $0.hasPrefix("destination down: circuit open until") && $0.contains("6 messages wait") }, "\(lines.all)")
    }
}
