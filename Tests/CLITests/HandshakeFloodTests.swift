import Foundation
import MsgKit
import MsgKitTesting
import Testing

/// `msg listen` over TLS against handshakes that never finish (issue #68): each
/// is closed at the listener's `hello_timeout`, one address holds at most 32
/// connections that have not proved themselves, and at its cap of 1,024 a
/// newcomer takes the place of the oldest unproved connection of the address
/// holding the most, so a good sender gets through however many stall.
@Suite(.timeLimit(.minutes(3))) struct HandshakeFloodTests {
    /// A Python client that keeps `total` connections from `spread` loopback
    /// addresses (127.0.0.2 on) each stalled in its TLS handshake: it sends the
    /// first bytes of a ClientHello and never the rest, and opens a closed one
    /// again 50 ms later. It prints `stalled N` five times a second.
    final class Flood {
        let process: TestProcess
        let out: FileHandle

        init(_ s: Sandbox, port: Int, total: Int, spread: Int) throws {
            _ = try s.file("flood.py", """
                import resource, selectors, socket, sys, time
                port, total, spread = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
                soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
                resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, total + 256), hard))
                hello = bytes.fromhex("16030102000100 01fc0303".replace(" ", "")) + bytes(32)
                sel = selectors.DefaultSelector()
                stalled, due = set(), []
                def later(i):
                    due.append((time.monotonic() + 0.05, i))
                def open_slot(i):
                    s = socket.socket(); s.setblocking(False)
                    try:
                        s.bind(("127.0.0.%d" % (2 + i % spread), 0))
                        s.connect(("127.0.0.1", port))
                    except BlockingIOError:
                        pass
                    except OSError:
                        s.close(); later(i); return
                    sel.register(s, selectors.EVENT_WRITE, i)
                def closed(s, i):
                    sel.unregister(s); stalled.discard(s); s.close(); later(i)
                for i in range(total):
                    open_slot(i)
                last = 0
                while True:
                    for key, events in sel.select(timeout=0.02):
                        s, i = key.fileobj, key.data
                        if events & selectors.EVENT_WRITE:
                            try:
                                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                                    raise OSError()
                                s.send(hello)
                            except OSError:
                                closed(s, i); continue
                            sel.modify(s, selectors.EVENT_READ, i); stalled.add(s)
                        else:
                            try:
                                data = s.recv(65536)
                            except OSError:
                                data = b""
                            if not data:
                                closed(s, i)
                    now = time.monotonic()
                    ready = [d for d in due if d[0] <= now]
                    due[:] = [d for d in due if d[0] > now]
                    for _, i in ready:
                        open_slot(i)
                    if now - last >= 0.2:
                        print("stalled", len(stalled), flush=True); last = now
                """)
            process = TestProcess(["/usr/bin/env", "python3", s.home + "/flood.py", "\(port)", "\(total)", "\(spread)"])
            let pipe = Pipe()
            process.standardOutput = pipe
            out = pipe.fileHandleForReading
            try process.run()
        }

        deinit {
            process.signal(SIGKILL)
            try? process.wait()
        }

        /// Reads its reports until one says at least `count` stalled; false when it
        /// ends first.
        func await(stalled count: Int) throws -> Bool {
            var line = Data()
            while let b = try out.read(upToCount: 1), !b.isEmpty {
                guard b != Data([10]) else {
                    if let n = Int(String(decoding: line, as: UTF8.self).dropFirst(8)), n >= count { return true }
                    line = Data()
                    continue
                }
                line += b
            }
            return false
        }
    }

    /// The check: 1,100 handshakes stalled from 44 addresses hold the
    /// listener at its cap, opened again as fast as they are closed, and a good
    /// mutual-TLS sender still delivers within 10 s.
    @Test func aGoodSenderDeliversWhileAThousandHandshakesStall() throws {
        let (s, env) = try TLSTests().sandbox()
        let listener = try ListenerProcess(s, address: "tls://127.0.0.1:0?cert=server.pem&key=server-key.pem&client_ca=ca.pem",
                                           ["--into", "file:\(s.home)/inbox"], environment: env)
        let flood = try Flood(s, port: Int(listener.port), total: 1100, spread: 44)
        #expect(try flood.await(stalled: 1000), "the flood holds a thousand handshakes")
        let started = Date()
        let r = try s.sh("""
            msg compose --to a --body x --enqueue > /dev/null
            msg flush --transport 'tls://127.0.0.1:\(listener.port)?ca=ca.pem&server_name=localhost&cert=client.pem&key=client-key.pem' > /dev/null; echo $?
            ls inbox/new | wc -l
            """, env: env)
        let took = Date().timeIntervalSince(started)
        #expect(r.lines == ["0", "1"], "\(r.out) \(r.err)")
        #expect(took < 10, "the good sender took \(took) s")
        #expect(try flood.await(stalled: 1000), "the flood went on")
    }

    /// One address holds at most 32 connections that have sent nothing; the
    /// listener's `hello_timeout=` closes a stalled handshake at its time.
    @Test func oneAddressHoldsAShareAndTheHelloTimeoutIsAParameter() throws {
        let (s, env) = try TLSTests().sandbox()
        let listener = try ListenerProcess(s, address: "tls://127.0.0.1:0?cert=server.pem&key=server-key.pem&client_ca=ca.pem&hello_timeout=1s",
                                           ["--into", "file:\(s.home)/inbox"], environment: env)
        let flood = try Flood(s, port: Int(listener.port), total: 40, spread: 1)
        #expect(try flood.await(stalled: 40))
        let started = Date()
        let stalled = try LineClient(port: listener.port)
        #expect(stalled.closedByPeer(within: 10), "closed at the hello timeout")
        #expect(Date().timeIntervalSince(started) < 4)
        let said = listener.stop().stderr
        #expect(said.contains("refused a connection from 127.0.0.2: it has 32 connections that have sent nothing yet"), "\(said.suffix(2000))")
        #expect(said.contains("no line (over TLS: no finished handshake) within 1s"), "\(said.suffix(2000))")
        let bad = try s.sh("msg listen 'tls://127.0.0.1:0?cert=server.pem&key=server-key.pem&hello_timeout=0s' --into file:x; echo $?", env: env)
        #expect(bad.lines.last == "78" && bad.err.contains("hello_timeout=0s is not from 100ms to 5m"), "\(bad.out) \(bad.err)")
    }
}
