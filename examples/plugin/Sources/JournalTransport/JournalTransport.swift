#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// `journal:PATH`: appends each delivered record as one line to PATH, made durable
/// (fsync) before delivery is reported. An id already in the journal is not
/// written again, and `lookup` answers from the journal.
public final class JournalTransport: Transport {
    private let path: String
    private var delivered: Set<String> = []

    /// - Throws: `config` without a path; `storeIO` when the journal cannot be read.
    public init(url: PluginURL) throws(MsgError) {
        guard !url.path.isEmpty else { throw MsgError(.config, "journal: needs a file, e.g. journal:/var/log/msg.ndjson") }
        path = url.path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }  // no journal yet
        defer { close(fd) }
        var reader = NDJSONReader(fd: fd)
        while let batch = try reader.nextBatch() {
            for line in batch {
                if case .success(let value) = line.json(), let id = value["id"]?.stringValue { delivered.insert(id) }
            }
        }
    }

    public func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> [DeliveryOutcome] {
        var lines: [UInt8] = []
        var fresh: [String] = []
        for r in records where !delivered.contains(r.message.id) && !fresh.contains(r.message.id) {
            // What a destination receives: no lease, no history, status delivered.
            lines += r.deliveredJSON + [0x0A]
            fresh.append(r.message.id)
        }
        do throws(MsgError) {
            if !lines.isEmpty {
                let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
                guard fd >= 0 else { throw MsgError(.unreachable, "cannot open \(path): \(SystemCalls.describe(errno))") }
                defer { close(fd) }
                try SystemCalls.writeAll(fd, lines, code: .unreachable, what: path)
                guard fsync(fd) == 0 else { throw MsgError(.unreachable, "cannot sync \(path): \(SystemCalls.describe(errno))") }
            }
        } catch {
            return records.map { _ in .failed(error, retryAfter: nil) }
        }
        delivered.formUnion(fresh)
        return records.map { _ in .delivered(confirmed: false) }
    }

    public func lookup(_ id: String) throws(MsgError) -> Bool? { delivered.contains(id) }
}

/// The one symbol msg looks for.
@_cdecl("msg_plugin_register")
public func msgPluginRegister(_ abi: UInt32, _ registrar: UnsafeMutableRawPointer) -> Int32 {
    PluginRegistrar.register(abiVersion: abi, registrar: registrar, plugin: "JournalTransport", version: "1.0.0") { r in
        r.transport(scheme: "journal") { url throws(MsgError) in try JournalTransport(url: url) }
    }
}
