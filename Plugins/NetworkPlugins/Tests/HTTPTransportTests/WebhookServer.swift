import Foundation
import MsgKit
import MsgKitTesting

/// scripts/webhook-server, started on loopback for one test and stopped when the
/// value goes away: a real HTTP server (Python's http.server, and its ssl for TLS).
final class WebhookServer {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    let process = TestProcess()
    let port: Int
    let logPath: String

    init(_ arguments: [String] = [], directory: String) throws {
        logPath = directory + "/server-log.ndjson"
        process.executableURL = URL(fileURLWithPath: Self.repository + "/scripts/webhook-server")
        process.arguments = ["--log", logPath] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.standardError
        try process.run()
        // Its first line says the port; it is listening by then.
        var line = Data()
        while let byte = try out.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data([10]) { line += byte }
        guard let text = String(data: line, encoding: .utf8), text.hasPrefix("listening on "), let port = Int(text.dropFirst(13)) else {
            throw MsgError(.unavailable, "webhook-server did not start: '\(String(decoding: line, as: UTF8.self))'")
        }
        self.port = port
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        try? process.wait()
    }

    /// What it logged, one entry per request.
    func requests() throws -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").map { line in
            try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
        }
    }

    /// How many requests with each key it applied.
    func applied() throws -> [String: Int] {
        var seen: [String: Int] = [:]
        for r in try requests() where r["applied"] as? Bool == true { seen[r["key"] as? String ?? "", default: 0] += 1 }
        return seen
    }
}

/// A new private directory.
func temporaryDirectory() -> String {
    let path = NSTemporaryDirectory() + "msg-http-" + UUID().uuidString.lowercased()
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Runs a command and fails when it fails.
@discardableResult
func shell(_ script: String, in directory: String) throws -> String {
    let r = try TestProcess.sh(script, in: directory)
    guard r.status == 0 else { throw MsgError(.config, "\(script) failed: \(r.text)") }
    return r.text
}

/// Two certificate authorities made with openssl: `ca.pem` signs the server's
/// certificate (for 127.0.0.1 and localhost) and a client's; `other-ca.pem` signs nothing used.
func makeCertificates(in dir: String) throws {
    try shell("""
        set -e
        for ca in ca other-ca; do
          openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=msg test $ca" -keyout $ca-key.pem -out $ca.pem 2>/dev/null
        done
        openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server-key.pem -out server.csr 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -extfile server.ext -out server.pem 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -subj /CN=msg-client -keyout client-key.pem -out client.csr 2>/dev/null
        openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -out client.pem 2>/dev/null
        chmod 600 *-key.pem
        """, in: dir)
}
