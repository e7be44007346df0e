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
/// what `msg metrics` prints. Anything but `GET /metrics` is 404; a request that does not
/// arrive within 5 s, or is larger than 8 KiB, is dropped.
public final class MetricsServer: Sendable {
    private let fd: Int32
    private let stopped = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    /// Where it listens, as `HOST:PORT` (the port chosen when 0 was asked).
    public let address: String

    /// Listens on `address` (`HOST:PORT`, IPv4; `:PORT` is 127.0.0.1).
    /// - Throws: `usage` for an address it cannot read; `unavailable` when it cannot listen.
    public init(address text: String, render: @escaping @Sendable () throws(MsgError) -> String, reporter: Reporter) throws(MsgError) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw MsgError(.usage, "--metrics \(text): expected HOST:PORT, such as 127.0.0.1:9464")
        }
        let host = text[..<colon].isEmpty ? "127.0.0.1" : String(text[..<colon])
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else {
            throw MsgError(.usage, "--metrics \(text): \(host) is not an IPv4 address")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw MsgError(.unavailable, "--metrics \(text): cannot make a socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw MsgError(.unavailable, "--metrics \(text): cannot listen (\(message))")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
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
        return { () throws(MsgError) -> String in try Metrics(store: handOff.store, top: top).render() }
    }

    private func serve(_ render: @Sendable () throws(MsgError) -> String) {
        while !stopped.load(ordering: .acquiring) {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 250) > 0 else { continue }
            let client = accept(fd, nil, nil)
            guard client >= 0 else { continue }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            defer { close(client) }
            guard let request = Self.readRequest(client) else { continue }
            let status: String
            var body: String
            if request.hasPrefix("GET /metrics ") || request.hasPrefix("GET /metrics?") {
                do throws(MsgError) {
                    body = try render()
                    status = "200 OK"
                } catch {
                    body = "msg: \(error.message)\n"
                    status = "503 Service Unavailable"
                }
            } else {
                body = "msg serves /metrics only\n"
                status = "404 Not Found"
            }
            let head = "HTTP/1.1 \(status)\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n" +
                "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
            let bytes = Array((head + body).utf8)
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { break }
                sent += n
            }
        }
    }

    /// A store handle given to the server's thread, its only user from then on.
    private final class HandOff: @unchecked Sendable {
        let store: any Store
        init(_ store: any Store) { self.store = store }
    }

    /// The request head (up to its blank line), or nil: too slow (5 s), too large
    /// (8 KiB) or closed.
    static func readRequest(_ client: Int32) -> String? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 2048)
        let deadline = Monotonic.milliseconds() + 5000
        while data.count < 8192 {
            let left = deadline - Monotonic.milliseconds()
            var p = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&p, 1, Int32(left)) > 0 else { return nil }
            let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return nil }
            data += buffer[..<n]
            if let end = data.firstRange(of: [13, 10, 13, 10]) ?? data.firstRange(of: [10, 10]) {
                return String(decoding: data[..<end.lowerBound], as: UTF8.self)
            }
        }
        return nil
    }
}
