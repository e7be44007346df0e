#if canImport(Glibc)
import Glibc
#endif
import MsgKit
import MsgSupport
import MsgKitTesting
import Testing

@Suite struct FileDropTransportTests {
    func dropped(_ dir: String) -> [String: Int] {
        var seen: [String: Int] = [:]
        for sub in ["new", "cur"] {
            for name in listDirectory("\(dir)/\(sub)") where name.hasSuffix(".json") { seen[String(name.dropLast(5)), default: 0] += 1 }
        }
        return seen
    }

    @Test func passesTransportConformance() throws {
        try TransportConformance.run {
            let dir = temporaryDirectory() + "/drop"
            return TransportUnderTest(transport: try loader.openTransport("file:\(dir)"), deliveries: { dropped(dir) },
                                      reopen: { try loader.openTransport("file:\(dir)") })
        }
    }

    @Test func makesTheDropAgainWhenItWasRemoved() throws {
        let dir = temporaryDirectory() + "/drop"
        let transport = try loader.openTransport("file:\(dir)")
        #expect(transport.deliver([Fixtures.message(1)], deadline: .seconds(3)) == [.delivered(confirmed: false)])
        #expect(try TestProcess.sh("rm -rf '\(dir)'").status == 0)
        #expect(transport.deliver([Fixtures.message(2)], deadline: .seconds(3)) == [.delivered(confirmed: false)])
        #expect(dropped(dir) == [Fixtures.message(2).id: 1])
    }

    /// Whoever else can write in the drop plants links where msg writes.
    @Test func linksPlantedInTheDropAreNeverWrittenThrough() throws {
        let dir = temporaryDirectory()
        let drop = "\(dir)/drop"
        let transport = try loader.openTransport("file:\(drop)")
        let victim = "\(dir)/victim"
        let text = Array("keep me\n".utf8)
        let fd = try SystemCalls.open(victim, O_WRONLY | O_CREAT, code: .storeIO)
        try SystemCalls.writeAll(fd, text, code: .storeIO, what: victim)
        close(fd)
        let (a, b) = (Fixtures.message(1), Fixtures.message(2))
        // At the names the old drop used, a link to a file and a dangling one; and a
        // link at the final name.
        #expect(symlink(victim, "\(drop)/tmp/\(a.id).json") == 0)
        #expect(symlink("\(dir)/created", "\(drop)/tmp/\(b.id).json") == 0)
        #expect(symlink(victim, "\(drop)/new/\(Fixtures.message(3).id).json.tmp") == 0)
        #expect(transport.deliver([a, b], deadline: .seconds(3)) == [.delivered(confirmed: false), .delivered(confirmed: false)])
        #expect(try readFile(victim) == text, "the link's target is untouched")
        #expect(!SystemCalls.exists("\(dir)/created"), "nothing made outside the drop")
        #expect(try Message(json: JSONParser.parse(Array(try readFile("\(drop)/new/\(a.id).json").dropLast()))).id == a.id)
    }

    @Test func aTmpOrNewThatIsALinkIsRefused() throws {
        for sub in ["tmp", "new"] {
            let dir = temporaryDirectory()
            let drop = "\(dir)/drop"
            let transport = try loader.openTransport("file:\(drop)")
            #expect(mkdir("\(dir)/elsewhere", 0o700) == 0)
            #expect(try TestProcess.sh("rm -rf '\(drop)/\(sub)'").status == 0 && symlink("\(dir)/elsewhere", "\(drop)/\(sub)") == 0)
            guard case .failed(let error, _)? = transport.deliver([Fixtures.message(1)], deadline: .seconds(3)).first else {
                Issue.record("delivered through a link at \(sub)/")
                continue
            }
            #expect(error.code == .unreachable, "retried later, not dead: \(error.message)")
            #expect(listDirectory("\(dir)/elsewhere").sorted() == [".", ".."], "nothing written through \(sub)")
            do {
                _ = try loader.openTransport("file:\(drop)")
                Issue.record("opened a drop whose \(sub) is a link")
            } catch {
                #expect(error.code == .unavailable && error.message.contains("not a directory of its own"), "\(error.message)")
            }
        }
    }

    @Test func refusesIdsThatAreNotUUIDs() throws {
        let dir = temporaryDirectory()
        let transport = try loader.openTransport("file:\(dir)/drop")
        for hostile in ["../../x", "a/b", "..", "", "01890A5D-AC96-774B-BCCE-B302099A8057"] {
            var m = Fixtures.message(1)
            m.id = hostile
            let outcome = transport.deliver([m], deadline: .seconds(3))
            guard case .failed(let error, _) = outcome.first else { Issue.record("delivered \(hostile)"); continue }
            #expect(error.code == .rejected, "\(hostile)")
        }
        #expect(listDirectory("\(dir)").sorted() == [".", "..", "drop"], "nothing written outside the drop")
        #expect(dropped("\(dir)/drop").isEmpty)
    }

    @Test func filesAndDirectoriesAreOwnerOnlyAndComplete() throws {
        let dir = temporaryDirectory() + "/drop"
        let transport = try loader.openTransport("file:\(dir)")
        let m = Fixtures.message(3)
        #expect(transport.deliver([m], deadline: .seconds(3)) == [.delivered(confirmed: false)])
        var st = stat()
        #expect(stat("\(dir)/new", &st) == 0 && st.st_mode & 0o777 == 0o700)
        #expect(stat("\(dir)/new/\(m.id).json", &st) == 0 && st.st_mode & 0o777 == 0o600)
        let text = try readFile("\(dir)/new/\(m.id).json")
        #expect(text.last == 0x0A && text.filter { $0 == 0x0A }.count == 1, "one JSON line")
        var delivered = m
        delivered.status = .delivered
        delivered.lease = nil
        delivered.history = []
        #expect(try Message(json: JSONParser.parse(Array(text.dropLast()))) == delivered, "the record as delivered")
        // A reader moves it to cur/: still known, still not delivered again.
        #expect(rename("\(dir)/new/\(m.id).json", "\(dir)/cur/\(m.id).json") == 0)
        #expect(try transport.lookup(m.id) == true)
        #expect(try transport.lookup(Array(repeating: m.id, count: 40)).allSatisfy { $0 == true }, "the batch lookup agrees")
        _ = transport.deliver([m], deadline: .seconds(3))
        #expect(dropped(dir) == [m.id: 1])
    }
}

@Suite struct StdoutFaultTests {
    func outcome(_ query: String, attempts: Int = 0, deadline: MsgDuration = .seconds(3)) throws -> DeliveryOutcome {
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        var m = Fixtures.message(1)
        m.attempts = attempts
        return try loader.openTransport("stdout:?fd=\(devNull)&\(query)").deliver([m], deadline: deadline)[0]
    }

    @Test(arguments: ["timeout", "unreachable", "rejected", "remote", "rate_limited"])
    func eachErrorClassIsReportedAsSuch(name: String) throws {
        guard case .failed(let error, let retryAfter) = try outcome("fail=1&error=\(name)&retry_after=7s") else {
            Issue.record("not failed")
            return
        }
        #expect(error.code.name == name)
        #expect(retryAfter == (name == "rate_limited" ? .seconds(7) : nil))
    }

    @Test func failFirstCountsTheAttemptsOnTheRecord() throws {
        #expect(try outcome("fail_first=2", attempts: 1) != .delivered(confirmed: false))
        #expect(try outcome("fail_first=2", attempts: 2) == .delivered(confirmed: false))
    }

    @Test func seededFailuresAreTheSameOnEveryRun() throws {
        let devNull = open("/dev/null", O_WRONLY)
        let ms = (0..<200).map { Fixtures.message($0) }
        let a = try loader.openTransport("stdout:?fd=\(devNull)&fail=0.3&seed=7").deliver(ms, deadline: .seconds(3))
        let b = try loader.openTransport("stdout:?fd=\(devNull)&fail=0.3&seed=7").deliver(ms, deadline: .seconds(3))
        let failures = a.filter { $0 != .delivered(confirmed: false) }.count
        #expect(a == b)
        #expect((40...80).contains(failures), "about 30% of 200: \(failures)")
    }

    @Test func theDeadlineIsHonoured() throws {
        guard case .failed(let error, _) = try outcome("latency=300ms", deadline: MsgDuration(milliseconds: 50)) else {
            Issue.record("a 300 ms delivery met a 50 ms deadline")
            return
        }
        #expect(error.code == .timeout)
        #expect(try outcome("latency=10ms", deadline: .seconds(1)) == .delivered(confirmed: false))
    }

    @Test func badParametersAreConfigurationErrors() {
        #expect(throws: MsgError(.config, "")) { try loader.openTransport("stdout:?fail=2") }
        #expect(throws: MsgError(.config, "")) { try loader.openTransport("stdout:?error=boom") }
        #expect(throws: MsgError(.config, "")) { try loader.openTransport("stdout:?nosuch=1") }
    }
}
