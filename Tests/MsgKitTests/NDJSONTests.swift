import MsgKit
import MsgSupport
import MsgKitTesting
import Testing

@Suite struct NDJSONTests {
    func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    @Test func splitsLFAndCRLFAndSkipsBlankLines() throws {
        let events = try NDJSONVerifier.verify(bytes("{\"a\":1}\r\n\n  \r\n{\"b\":2}\n{\"c\":3}"))
        #expect(events == [
            .line(number: 1, bytes: bytes("{\"a\":1}")),
            .line(number: 4, bytes: bytes("{\"b\":2}")),
            .line(number: 5, bytes: bytes("{\"c\":3}")),
        ])
    }

    @Test func refusesLongLinesAndGoesOn() throws {
        let long = String(repeating: "x", count: 100)
        let input = "ok\n\(long)\nfine\n\(long)\r\nend\n" + String(repeating: "y", count: 20) + "\r\n" + long
        let events = try NDJSONVerifier.verify(bytes(input), maxLineLength: 20)
        #expect(events == [
            .line(number: 1, bytes: bytes("ok")), .tooLong(number: 2), .line(number: 3, bytes: bytes("fine")),
            .tooLong(number: 4), .line(number: 5, bytes: bytes("end")),
            .line(number: 6, bytes: bytes(String(repeating: "y", count: 20))), .tooLong(number: 7),
        ])
    }

    @Test func randomStreamsSplitTheSameWhateverTheChunks() throws {
        var rng = SplitMix64(seed: 11)
        let alphabet = bytes("{}\"ab \r\n\n\u{e9}") + [0xFF]
        for _ in 0..<200 {
            let input = (0..<Int(rng.next() % 200)).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }
            _ = try NDJSONVerifier.verify(input, maxLineLength: 16, seeds: 0..<4)
        }
    }

    @Test func readerReportsBadLinesWithNumbersAndKeepsGoing() throws {
        let input = bytes("{\"a\":1}\ngarbage\n") + [0x22, 0xFF, 0x22, 0x0A] + bytes("\n{\"b\":2}\n")
        let lines = try readAll(input)
        #expect(lines.map(\.number) == [1, 2, 3, 5])
        let results = lines.map { $0.json() }
        #expect((try? results[0].get()) == .object([.init("a", .number("1"))]))
        #expect(message(results[1]) == "invalid JSON: unexpected character 'g' at column 1")
        #expect(message(results[2]) == "invalid UTF-8 at column 2")
        #expect((try? results[3].get()) != nil)
    }

    func message(_ r: Result<JSONValue, MsgError>) -> String? {
        if case .failure(let e) = r { return e.message }
        return nil
    }

    func readAll(_ input: [UInt8]) throws -> [NDJSONReader.Line] {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        try SystemCalls.writeAll(fds[1], input, code: .storeIO, what: "pipe")
        close(fds[1])
        defer { close(fds[0]) }
        var reader = NDJSONReader(fd: fds[0])
        var lines: [NDJSONReader.Line] = []
        while let batch = try reader.nextBatch() { lines += batch }
        return lines
    }
}

#if canImport(Glibc)
import Glibc
#endif
