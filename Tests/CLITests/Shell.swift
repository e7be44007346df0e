import Foundation
import MsgEngine
import MsgKit
import MsgKitTesting

/// What a shell script run by a test printed and how it ended.
struct Run {
    let status: Int32
    let out: String
    let err: String
    var lines: [String] { out.split(separator: "\n").map(String.init) }
}

/// The directory holding the built `msg` and plugins (the test runner's own).
let buildDirectory = PluginLoader.executableDirectory()!

/// A private MSG_HOME for one test, with helpers to run `msg` pipelines in it.
/// The directory is removed when the sandbox goes away.
final class Sandbox {
    let home: String

    init() throws {
        home = NSTemporaryDirectory() + "msg-cli-" + UUID().uuidString.lowercased()
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
    }

    deinit {
        // A tmpfs test may leave a mount behind only inside its own namespace.
        try? FileManager.default.removeItem(atPath: home)
    }

    /// Runs `script` with bash (`pipefail` off, so `PIPESTATUS` is available), `msg`
    /// on the PATH, MSG_HOME set and no config file. Still running after `timeout`
    /// seconds (default ``TestProcess/defaultTimeout``), it is killed with all it
    /// started, and the error thrown holds what it printed.
    func sh(_ script: String, stdin: String? = nil, env: [String: String] = [:], wrapper: String? = nil, timeout: Double? = nil) throws -> Run {
        let p = TestProcess()
        if let wrapper {
            let words = wrapper.split(separator: " ").map(String.init)
            p.executableURL = URL(fileURLWithPath: "/usr/bin/" + words[0])
            p.arguments = Array(words.dropFirst()) + ["/bin/bash", "-c", script]
        } else {
            p.executableURL = URL(fileURLWithPath: "/bin/bash")
            p.arguments = ["-c", script]
        }
        p.currentDirectoryURL = URL(fileURLWithPath: home)
        var environment = ProcessInfo.processInfo.environment
        for key in ["MSG_STORE", "MSG_TRANSPORT", "MSG_PLUGIN_PATH", "MSG_CONFIG"] { environment[key] = nil }
        environment["MSG_HOME"] = home
        environment["XDG_CONFIG_HOME"] = home + "/config"
        environment["PATH"] = buildDirectory + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        for (k, v) in env { environment[k] = v }
        p.environment = environment
        let outPath = home + "/.out-\(UUID().uuidString)", errPath = home + "/.err-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        p.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        if let stdin {
            let inPath = home + "/.in-\(UUID().uuidString)"
            _ = FileManager.default.createFile(atPath: inPath, contents: Data(stdin.utf8))
            p.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: inPath))
        } else {
            p.standardInput = FileHandle.nullDevice
        }
        if let timeout { p.timeout = timeout }
        try p.run()
        let ended = Result { try p.wait() }
        let out = try String(contentsOfFile: outPath, encoding: .utf8)
        let err = try String(contentsOfFile: errPath, encoding: .utf8)
        if case .failure(let error) = ended {
            // What it printed before its deadline says where it stood.
            throw MsgError(.unavailable, "\(error)\n--- script:\n\(script)\n--- stdout:\n\(out)\n--- stderr:\n\(err)")
        }
        return Run(status: p.terminationStatus, out: out, err: err)
    }

    /// Starts `msg ARGS` in the sandbox as its own process (descriptor 3 on /dev/null,
    /// for the mock transport to write to), stdout and stderr on pipes.
    func start(_ arguments: [String]) throws -> (TestProcess, Pipe, Pipe) {
        let p = TestProcess()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = ["-c", "exec 3>/dev/null; exec \"$0\" \"$@\"", buildDirectory + "/msg"] + arguments
        p.environment = ["MSG_HOME": home, "XDG_CONFIG_HOME": home + "/config"]
        p.standardInput = FileHandle.nullDevice
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        return (p, out, err)
    }

    /// Writes the config file every command in the sandbox reads
    /// (`$XDG_CONFIG_HOME/msg/config`).
    func config(_ text: String) throws {
        try FileManager.default.createDirectory(atPath: home + "/config/msg", withIntermediateDirectories: true)
        _ = try file("config/msg/config", text)
    }

    /// Writes `text` to a file in the sandbox and returns its path.
    func file(_ name: String, _ text: String) throws -> String {
        let path = home + "/" + name
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
            throw CocoaError(.fileWriteUnknown)
        }
        return path
    }
}

/// The ids of NDJSON records, read by position: every record msg writes starts
/// with `{"id":"` and its 36-character id. Cheap enough for 20,000-record checks.
func ids(_ text: String) -> [String] {
    text.split(separator: "\n").compactMap { line in
        guard line.hasPrefix("{\"id\":\""), line.utf8.count >= 43 else { return nil }
        return String(line.dropFirst(7).prefix(36))
    }
}

/// Parses NDJSON output into records.
func records(_ text: String) throws -> [Message] {
    try text.split(separator: "\n").map { try Message(jsonText: String($0)) }
}

extension Sandbox {
    /// Runs `msg ARGUMENTS` in the sandbox and kills it with SIGKILL once it has
    /// printed `lines` records (or ended).
    func killFlush(_ arguments: [String], after lines: Int) throws {
        let p = TestProcess()
        p.executableURL = URL(fileURLWithPath: buildDirectory + "/msg")
        p.arguments = arguments
        p.environment = ["MSG_HOME": home, "XDG_CONFIG_HOME": home + "/config"]
        let out = Pipe()
        p.standardOutput = out
        p.standardInput = FileHandle.nullDevice
        try p.run()
        var seen = 0
        while seen < lines {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen += chunk.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
        }
        kill(p.processIdentifier, SIGKILL)
        _ = out.fileHandleForReading.readDataToEndOfFile()
        try p.wait()
    }
}

extension Sandbox {
    /// The bodies of the records in the default file drop (`outbox/new`), sorted:
    /// one per id delivered, whatever the drop was given.
    func droppedBodies() throws -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: home + "/outbox/new")) ?? []
        return try files.filter { $0.hasSuffix(".json") }.map { name in
            try Message(jsonText: String(contentsOfFile: home + "/outbox/new/" + name, encoding: .utf8)).body
        }.sorted()
    }
}

/// Looks every 50 ms, for up to `seconds`, until `condition` holds (a daemon's
/// progress, seen from outside as a user would).
func eventually(within seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let until = Date().addingTimeInterval(seconds)
    repeat {
        if try condition() { return true }
        usleep(50_000)
    } while Date() < until
    return try condition()
}
