#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// The `file:DIR` transport: a Maildir-style drop directory.
///
/// Delivery of a batch: each record is written to `DIR/tmp/<id>.json`; one
/// `syncfs` makes all of them durable (one journal commit for the batch instead
/// of one `fsync` per file); each is renamed, in order, to `DIR/new/<id>.json`;
/// one `fsync` of `new/` makes the renames durable; only then is delivery
/// reported. A reader that takes files from `new/` (moving them to `cur/`) never
/// sees a partial file.
///
/// Why `syncfs`: one `fdatasync` per file costs a device cache flush each (~0.5 ms
/// on the development machine's disk), capping a drop near 2,000 messages/s;
/// `syncfs` makes a whole batch durable with one journal commit and reports write
/// errors. Its cost is that it also writes out other processes' dirty data on the
/// same filesystem, so a flush is slower while something else writes heavily there.
/// (git's "batch" fsync, write-out then one fsync, is not claimed safe on Linux.)
///
/// An id is delivered at most once: if `new/<id>.json` or `cur/<id>.json` exists,
/// delivering it again is a no-op and ``lookup(_:)`` says true. Only a canonical
/// UUID is ever used as a file name; any other id is `rejected`. Directories are
/// created 0700, files 0600.
public final class FileDropTransport: Transport {
    let root: String

    /// Opens (creating) the drop directory `url.path` (`file:DIR` or `file:///DIR`).
    /// - Throws: `config` without a path; `unavailable` when it cannot be created.
    public init(url: PluginURL) throws(MsgError) {
        guard !url.path.isEmpty else { throw MsgError(.config, "the file: transport needs a directory, e.g. file:/var/spool/msg/outbox") }
        root = url.path
        for sub in ["", "/tmp", "/new", "/cur"] {
            try SystemCalls.makeDirectories(root + sub, code: .unavailable)
        }
    }

    public func deliver(_ messages: [Message], deadline: MsgDuration) -> [DeliveryOutcome] {
        // Someone removed the drop while a long-running flush or listen used it:
        // make it again rather than fail every later message.
        if access("\(root)/tmp", F_OK) != 0 || access("\(root)/new", F_OK) != 0 {
            for sub in ["", "/tmp", "/new", "/cur"] { try? SystemCalls.makeDirectories(root + sub, code: .unavailable) }
        }
        var outcomes = [DeliveryOutcome?](repeating: nil, count: messages.count)
        var pending: [(index: Int, id: String, temporary: String)] = []
        var seen: Set<String> = []
        for (i, m) in messages.enumerated() {
            guard UUIDText.isCanonical(m.id) else {
                outcomes[i] = .failed(MsgError(.rejected, "id '\(m.id.prefix(60))' is not a UUID; it cannot name a file"), retryAfter: nil)
                continue
            }
            if isDelivered(m.id) || !seen.insert(m.id).inserted {
                outcomes[i] = .delivered(confirmed: false)
                continue
            }
            let temporary = "\(root)/tmp/\(m.id).json"
            do throws(MsgError) {
                var w = JSONWriter(capacity: 512)
                m.write(to: &w)
                w.raw("\n")
                let fd = try SystemCalls.open(temporary, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o600, code: .unreachable)
                defer { close(fd) }
                try SystemCalls.writeAll(fd, w.bytes, code: .unreachable, what: temporary)
                pending.append((i, m.id, temporary))
            } catch {
                outcomes[i] = .failed(error, retryAfter: nil)
            }
        }
        if !pending.isEmpty {
            do throws(MsgError) {
                try syncFilesystem()
                for p in pending where rename(p.temporary, "\(root)/new/\(p.id).json") != 0 {
                    outcomes[p.index] = .failed(SystemCalls.error(.unreachable, "cannot move \(p.temporary) into new/"), retryAfter: nil)
                }
                try SystemCalls.fsyncDirectory("\(root)/new", code: .unreachable)
                for p in pending where outcomes[p.index] == nil { outcomes[p.index] = .delivered(confirmed: false) }
            } catch {
                // Nothing in this batch is known to be durable: report it failed. A file
                // already renamed is found by lookup and never delivered twice.
                for p in pending where outcomes[p.index] == nil { outcomes[p.index] = .failed(error, retryAfter: nil) }
            }
        }
        return outcomes.map { $0 ?? .failed(MsgError(.remote, "internal error: no outcome"), retryAfter: nil) }
    }

    public func lookup(_ id: String) throws(MsgError) -> Bool? {
        guard UUIDText.isCanonical(id) else { return false }
        return isDelivered(id)
    }

    /// Many ids at once: one listing of `new/`, then of `cur/` (in that order, so a
    /// file a reader moves from one to the other meanwhile is still seen).
    public func lookup(_ ids: [String]) throws(MsgError) -> [Bool?] {
        guard ids.count >= 32 else {
            var answers: [Bool?] = []
            for id in ids { answers.append(try lookup(id)) }
            return answers
        }
        let delivered = try names(in: "new").union(try names(in: "cur"))
        return ids.map { delivered.contains("\($0).json") }
    }

    private func names(in sub: String) throws(MsgError) -> Set<String> {
        guard let dir = opendir("\(root)/\(sub)") else { throw SystemCalls.error(.unreachable, "cannot list \(root)/\(sub)") }
        defer { closedir(dir) }
        var names: Set<String> = []
        while let entry = readdir(dir) {
            names.insert(withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            })
        }
        return names
    }

    private func isDelivered(_ id: String) -> Bool {
        access("\(root)/new/\(id).json", F_OK) == 0 || access("\(root)/cur/\(id).json", F_OK) == 0
    }

    /// Makes every file written so far durable with one call for the whole batch.
    private func syncFilesystem() throws(MsgError) {
        let fd = try SystemCalls.open("\(root)/tmp", O_RDONLY | O_DIRECTORY, code: .unreachable)
        defer { close(fd) }
        if syncfs(fd) != 0 { throw SystemCalls.error(.unreachable, "cannot sync \(root)") }
    }
}

/// glibc's `syncfs(2)`, which its Swift module hides behind `_GNU_SOURCE`.
@_silgen_name("syncfs")
private func syncfs(_ fd: Int32) -> Int32

/// Registers the `file:` scheme.
@_cdecl("msg_plugin_register")
public func msgPluginRegister(_ abi: UInt32, _ registrar: UnsafeMutableRawPointer) -> Int32 {
    PluginRegistrar.register(abiVersion: abi, registrar: registrar, plugin: "FileDropTransport", version: MsgVersion.current) { r in
        r.transport(scheme: "file") { url throws(MsgError) in try FileDropTransport(url: url) }
    }
}
