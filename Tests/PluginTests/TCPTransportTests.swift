#if canImport(Glibc)
import Glibc
#endif
import MsgKit
import MsgKitTesting
import Testing

/// A `tcp` listener running in the test process, stopped when released.
final class RunningListener {
    let listener: any Listener
    let url: String

    init(into sink: String, token: String? = nil) throws {
        let context = ListenerContext(sink: try loader.openTransport(sink), deadline: .seconds(3), report: { _ in })
        listener = try loader.openListener("tcp://127.0.0.1:0" + (token.map { "?token=\($0)" } ?? ""), context: context)
        url = try listener.start()
    }

    deinit { listener.stop() }
}

@Suite struct TCPTransportTests {
    @Test func passesTransportConformance() throws {
        var running: [RunningListener] = []
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let faults = TransportFaults(
            failing: { code in
                switch code {
                case .timeout:
                    let l = try RunningListener(into: "stdout:?fd=\(devNull)&latency=5s")
                    running.append(l)
                    return try loader.openTransport(l.url)
                case .unreachable:
                    // A port that was just free: nothing listens there.
                    let url = try RunningListener(into: "stdout:?fd=\(devNull)").url
                    return try loader.openTransport(url + "?connect_timeout=1s")
                default:
                    let l = try RunningListener(into: "stdout:?fd=\(devNull)&fail=1&error=\(code.name)")
                    running.append(l)
                    return try loader.openTransport(l.url)
                }
            },
            slow: { latency in
                let l = try RunningListener(into: "stdout:?fd=\(devNull)&latency=\(latency)")
                running.append(l)
                return try loader.openTransport(l.url)
            })
        try TransportConformance.run(faults: faults) {
            let dir = temporaryDirectory() + "/inbox"
            let l = try RunningListener(into: "file:\(dir)")
            running.append(l)
            return TransportUnderTest(transport: try loader.openTransport(l.url), deliveries: { inbox(dir) },
                                      reopen: { try loader.openTransport(l.url) })
        }
    }

    @Test func badAddressesAreConfigErrors() throws {
        for url in ["tcp://127.0.0.1", "tcp://:7000", "tcp://host:0", "tcp://host:70000", "tcp://host:7000?window=0", "tcp://host:1?nosuch=1", "tcp:host:1"] {
            #expect(throws: MsgError(.config, ""), "\(url)") { try loader.openTransport(url) }
        }
    }

    @Test func aWrongTokenReachesNothing() throws {
        let dir = temporaryDirectory() + "/inbox"
        let l = try RunningListener(into: "file:\(dir)", token: "s3cret")
        let m = Fixtures.message(1)
        for url in [l.url, l.url + "?token=wrong", l.url + "?token=s3cre"] {
            let outcome = try loader.openTransport(url).deliver([m], deadline: .seconds(3))
            guard case .failed(let e, _)? = outcome.first else { Issue.record("\(url) delivered"); continue }
            #expect(e.code == .config && e.message.contains("token"), "a refused token stops the run: \(e.message)")
        }
        #expect(inbox(dir).isEmpty)
        #expect(try loader.openTransport(l.url + "?token=s3cret").deliver([m], deadline: .seconds(3)) == [.delivered(confirmed: false)])
        #expect(inbox(dir) == [m.id: 1])
    }

    @Test func keepsOrderWithManyInFlight() throws {
        let dir = temporaryDirectory() + "/inbox"
        let l = try RunningListener(into: "file:\(dir)")
        var ms = (0..<300).map { Fixtures.message($0) }
        ms[100].id = "../../escape"  // refused by the inbox, in its place among the others
        let outcomes = try loader.openTransport(l.url + "?window=32").deliver(ms, deadline: .seconds(5))
        #expect(outcomes.count == 300)
        for (i, o) in outcomes.enumerated() {
            if i == 100 {
                guard case .failed(let e, _) = o else { Issue.record("the hostile id was delivered"); continue }
                #expect(e.code == .rejected)
            } else {
                #expect(o == .delivered(confirmed: false), "message \(i): \(o)")
            }
        }
        #expect(inbox(dir).count == 299 && inbox(dir).values.allSatisfy { $0 == 1 })
    }
}

/// How many times each id is in a file-drop directory.
func inbox(_ dir: String) -> [String: Int] {
    var seen: [String: Int] = [:]
    for sub in ["new", "cur"] {
        for name in listDirectory("\(dir)/\(sub)") where name.hasSuffix(".json") { seen[String(name.dropLast(5)), default: 0] += 1 }
    }
    return seen
}
