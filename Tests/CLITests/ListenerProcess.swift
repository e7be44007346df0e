import Foundation
import MsgKit
import MsgKitTesting
import MsgSupport

/// A `msg listen` process for one test: started on a free port, which it reads
/// from the "listening on" line of standard error; killed when released.
final class ListenerProcess {
    let process = TestProcess()
    let url: String
    private let errors = Pipe()
    private var said = ""

    /// Starts `msg listen ADDRESS ARGS…` in the sandbox (no address: `MSG_LISTEN` in
    /// `environment` says it) and waits until it listens.
    init(_ s: Sandbox, address: String? = "tcp://127.0.0.1:0", _ arguments: [String] = [], environment: [String: String] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: buildDirectory + "/msg")
        process.arguments = ["listen"] + (address.map { [$0] } ?? []) + arguments
        process.environment = ["MSG_HOME": s.home, "XDG_CONFIG_HOME": s.home + "/config"].merging(environment) { $1 }
        process.currentDirectoryURL = URL(fileURLWithPath: s.home)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        while !said.contains("listening on") || !said.hasSuffix("\n") {
            let chunk = errors.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            said += String(decoding: chunk, as: UTF8.self)
        }
        guard let on = said.range(of: "listening on "),
              let range = said[on.upperBound...].range(of: #"(tcp|tls)://[^ ,]+"#, options: .regularExpression) else {
            throw MsgError(.unavailable, "msg listen did not start: \(said)")
        }
        url = String(said[range])
    }

    /// What it has said on standard error so far, up to its "listening on" line.
    var saidAtStart: String { said }

    /// The port bound.
    var port: UInt16 { UInt16(url.split(separator: ":").last ?? "") ?? 0 }

    /// Sends `signal`, waits for the exit and returns its status and all it said.
    func stop(_ signal: Int32 = SIGTERM) -> (status: Int32, stderr: String) {
        kill(process.processIdentifier, signal)
        let rest = errors.fileHandleForReading.readDataToEndOfFile()
        try? process.wait()
        return (process.terminationStatus, said + String(decoding: rest, as: UTF8.self))
    }

    /// The most memory the process has used so far, in KiB (VmHWM).
    func peakMemoryKiB() throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            try? process.wait()
        }
    }
}

/// A plain TCP client speaking msg-tcp(7) by hand, as `nc` or a Python socket would.
final class LineClient {
    private let fd: Int32

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let ok = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard ok == 0 else { throw MsgError(.unreachable, "connect: errno \(errno)") }
    }

    deinit { close(fd) }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        try SystemCalls.writeAll(fd, bytes, code: .unreachable, what: "the socket")
    }

    /// Says it has nothing more to send; the receiver answers what it got, then closes.
    func finishSending() { shutdown(fd, Int32(SHUT_WR)) }

    /// Every line the receiver sends until it closes the connection.
    func readAll() -> [String] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        return bytes.split(separator: 0x0A).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Whether the receiver closes the connection within `seconds` (what it sends is
    /// read and dropped); false when it is still open then.
    func closedByPeer(within seconds: Int) -> Bool {
        var limit = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n == 0 { return true }
            if n < 0 { return false }
        }
    }

    /// Whether the connection is still open: what the receiver sent is read and
    /// dropped, without waiting for more.
    func isOpen() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n == 0 { return false }
            if n < 0 { return errno == EAGAIN || errno == EWOULDBLOCK }
        }
    }

    /// The answer objects, parsed.
    func answers() throws -> [JSONValue] { try readAll().map { try JSONParser.parse($0) } }
}
