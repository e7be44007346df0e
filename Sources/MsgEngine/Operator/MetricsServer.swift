#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import Dispatch
import MsgKit
import Synchronization

/// `flush --watch --metrics ADDR` and `listen --metrics ADDR`: serves metrics text
/// at `GET /metrics` over plain HTTP/1.1 on its own thread, one request per
/// connection, for Prometheus to scrape. `render` runs on that thread only: for
/// flush, ``storeMetrics(_:top:)`` reads the store through a handle handed over
/// whole (delivery's handle is never shared between threads), so a scrape shows
/// what `msg metrics` prints. Anything but `GET /metrics` is 404.
///
/// One idle client cannot blind it: the thread polls every connection at once
/// (nonblocking), each has ``idleLimit`` to send its request and take the answer,
/// a request head larger than ``headLimit`` is answered 431 unread, and past
/// ``connectionLimit`` the oldest connection gives way to the new one, so the
/// accept queue never fills.
public final class MetricsServer: Sendable {
    /// How long a connection may take to send its request and read the answer.
    public static let idleLimit: Int64 = 5000
    /// The largest request head read (bytes); past it the answer is 431.
    public static let headLimit = 8192
    /// Connections kept at once; past it the oldest is closed.
    public static let connectionLimit = 512

    private let fd: Int32
    private let stopped = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    /// Where it listens, as `HOST:PORT` (the port chosen when 0 was asked).
    public let address: String

    /// Listens on `listening`.
    /// - Throws: `unavailable` when it cannot listen.
    public init(address listening: MetricsAddress, render: @escaping @Sendable () throws(MsgError) -> String, reporter: Reporter) throws(MsgError) {
        let (text, host, port) = (listening.description, listening.host, listening.port)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        _ = inet_pton(AF_INET, host, &addr.sin_addr)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw MsgError(.unavailable, "--metrics \(text): cannot make a socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw MsgError(.unavailable, "--metrics \(text): cannot listen (\(message))")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        self.fd = fd
        address = "\(host):\(UInt16(bigEndian: actual.sin_port))"
        let loopback = host.hasPrefix("127.")
        reporter.say("metrics at http://\(address)/metrics" + (loopback ? "" : " (reachable from other hosts: \(host) is not loopback)"))
        let thread = DispatchQueue(label: "msg.metrics")
        thread.async { [self] in
            serve(render)
            done.signal()
        }
    }

    /// Stops listening and waits for the request being answered.
    public func stop() {
        stopped.store(true, ordering: .releasing)
        shutdown(fd, Int32(SHUT_RDWR))
        done.wait()
        close(fd)
    }

    /// What renders ``Metrics`` of `store`, which the server's thread alone uses from then on.
    public static func storeMetrics(_ store: any Store, top: Int = 20) -> @Sendable () throws(MsgError) -> String {
        let handOff = HandOff(store)
        return { () throws(MsgError) -> String in
            // A store that cannot be reached (a server restarting) is said, not an error:
            // the scrape answers, with msg_store_up 0, and the next one reads the store again.
            var up = PrometheusText()
            up.family("msg_store_up", .gauge, help: "1 when the store answered this scrape, 0 when it could not be reached.")
            do throws(MsgError) {
                let text = try Metrics(store: handOff.store, top: top).render()
                up.sample("msg_store_up", [], 1)
                return text + up.text
            } catch where error.code == .unreachable {
                up.sample("msg_store_up", [], 0)
                return up.text
            }
        }
    }

    /// One client: what it sent, the answer once its head is whole, and its deadline.
    private struct Connection {
        var fd: Int32
        var input: [UInt8] = []
        var output: [UInt8] = []
        var sent = 0
        var deadline: Int64
    }

    private func serve(_ render: @Sendable () throws(MsgError) -> String) {
        var connections: [Connection] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        defer { for c in connections { close(c.fd) } }
        while !stopped.load(ordering: .acquiring) {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
                + connections.map { pollfd(fd: $0.fd, events: Int16($0.output.isEmpty ? POLLIN : POLLOUT), revents: 0) }
            let now = Monotonic.milliseconds()
            let wait = min(250, max(0, (connections.map(\.deadline).min() ?? now + 250) - now))
            guard poll(&fds, nfds_t(fds.count), Int32(wait)) >= 0 || errno == EINTR else { continue }
            let after = Monotonic.milliseconds()
            var kept: [Connection] = []
            for (i, c) in connections.enumerated() {
                var c = c
                if step(&c, fds[i + 1].revents, &buffer, render), after < c.deadline {
                    kept.append(c)
                } else {
                    close(c.fd)
                }
            }
            connections = kept
            guard fds[0].revents & Int16(POLLIN) != 0 else { continue }
            while true {
                // accept4 is not in Swift's Glibc; spawned children close what they do not need.
                let client = accept(fd, nil, nil)
                guard client >= 0 else { break }
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
                if connections.count >= Self.connectionLimit { close(connections.removeFirst().fd) }
                connections.append(Connection(fd: client, deadline: after + Self.idleLimit))
            }
        }
    }

    /// Reads what a connection sent, or writes its answer, as `events` allow.
    /// - Returns: whether it stays open.
    private func step(_ c: inout Connection, _ events: Int16, _ buffer: inout [UInt8], _ render: @Sendable () throws(MsgError) -> String) -> Bool {
        if c.output.isEmpty {
            guard events & Int16(POLLIN | POLLHUP | POLLERR) != 0 else { return true }
            let n = buffer.withUnsafeMutableBytes { recv(c.fd, $0.baseAddress, min($0.count, Self.headLimit + 4 - c.input.count), 0) }
            guard n > 0 else { return n < 0 && (errno == EAGAIN || errno == EINTR) }
            c.input += buffer[..<n]
            if let end = c.input.firstRange(of: [13, 10, 13, 10]) ?? c.input.firstRange(of: [10, 10]) {
                c.output = Self.answer(String(decoding: c.input[..<end.lowerBound], as: UTF8.self), render)
            } else if c.input.count > Self.headLimit {
                c.output = Self.response("431 Request Header Fields Too Large", "msg: a request head is at most \(Self.headLimit) bytes\n")
            }
            return true
        }
        guard events & Int16(POLLOUT | POLLHUP | POLLERR) != 0 else { return true }
        let n = c.output[c.sent...].withUnsafeBytes { send(c.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard n > 0 else { return n < 0 && (errno == EAGAIN || errno == EINTR) }
        c.sent += n
        return c.sent < c.output.count
    }

    /// The answer to a request head.
    static func answer(_ request: String, _ render: @Sendable () throws(MsgError) -> String) -> [UInt8] {
        guard request.hasPrefix("GET /metrics ") || request.hasPrefix("GET /metrics?") else {
            return response("404 Not Found", "msg serves /metrics only\n")
        }
        do throws(MsgError) {
            return response("200 OK", try render())
        } catch {
            return response("503 Service Unavailable", "msg: \(error.message)\n")
        }
    }

    static func response(_ status: String, _ body: String) -> [UInt8] {
        Array(("HTTP/1.1 \(status)\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body).utf8)
    }

    /// A store handle given to the server's thread, its only user from then on.
    private final class HandOff: @unchecked Sendable {
        let store: any Store
        init(_ store: any Store) { self.store = store }
    }
}
