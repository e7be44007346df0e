#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// The `file:DIR` transport: a Maildir-style drop directory.
///
/// Delivery of a batch: each record is written to a new file in `DIR/tmp/`; one
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
/// created 0700, files 0600. The drop is made where missing, but not its parents
/// unless the URL asks (`?parents=yes`): a mistyped path is an error, not a new tree.
///
/// Someone else may be able to write in the drop (a consumer's group, say), so no
/// name in it is trusted: each record is written to a new file with a name nobody
/// can guess (`tmp/<id>.<random>.json`, `O_CREAT | O_EXCL | O_NOFOLLOW`), and
/// `tmp` and `new` are opened without following a link: a link planted at either
/// place is never written through, and a `tmp` or `new` that is a link is refused.
public final class FileDropTransport: Transport {
    let root: String
    /// Whether missing parents of the drop are made too (`?parents=yes`).
    let parents: Bool

    /// Opens (creating) the drop directory `url.path` (`file:DIR` or `file:///DIR`).
    /// - Throws: `config` without a path, with an unknown parameter, or when the
    ///   drop's parent is missing and not asked for; `unavailable` when it cannot
    ///   be created, or when `tmp`, `new` or `cur` is not a directory of its own.
    public init(url: PluginURL) throws(MsgError) {
        guard !url.path.isEmpty else { throw MsgError(.config, "the file: transport needs a directory, e.g. file:/var/spool/msg/outbox") }
        root = url.path
        parents = try URLParameters(url, "file:", names: ["parents"]).yes("parents") ?? false
        let parent = SystemCalls.directory(of: root)
        // The parent through links (a home that is a link is a home).
        var st = stat()
        if !parents && !SystemCalls.exists(root) && !(stat(parent, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR) {
            throw MsgError(.config, "'\(url.text)': \(parent) is no directory; create it, or add ?parents=yes to have msg create it")
        }
        try makeDirectories(code: .unavailable)
        removeStaleTemporaries()
    }

    /// Makes the drop (with its parents when asked) and its `tmp`, `new` and `cur`
    /// where missing. - Throws: `code` when one cannot be made or is not a directory itself.
    private func makeDirectories(code: MsgError.Code) throws(MsgError) {
        if parents {
            try SystemCalls.makeDirectories(root, code: code)
        } else if mkdir(root, 0o700) != 0 && errno != EEXIST {
            throw SystemCalls.error(code, "cannot create directory \(root)")
        }
        for sub in ["tmp", "new", "cur"] {
            let path = "\(root)/\(sub)"
            if mkdir(path, 0o700) != 0 && errno != EEXIST { throw SystemCalls.error(code, "cannot create directory \(path)") }
            guard SystemCalls.isRealDirectory(path) else {
                throw MsgError(code, "\(path) is not a directory of its own (a symbolic link or a file): msg does not deliver through it")
            }
        }
    }

    /// Removes what crashed deliveries left in `tmp/` over 36 hours ago (Maildir's rule).
    private func removeStaleTemporaries() {
        let cutoff = time(nil) - 36 * 3600
        for name in SystemCalls.names(in: "\(root)/tmp") {
            var st = stat()
            let path = "\(root)/tmp/\(name)"
            if lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_mtim.tv_sec < cutoff { unlink(path) }
        }
    }

    /// `tmp/` and `new/`, opened without following links; made again first when
    /// someone removed the drop while a long-running flush or listen used it.
    private func openDirectories() throws(MsgError) -> (tmp: Int32, new: Int32) {
        func open(_ sub: String) throws(MsgError) -> Int32 {
            let path = "\(root)/\(sub)"
            let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if fd >= 0 { return fd }
            if errno == ELOOP || errno == ENOTDIR {
                throw MsgError(.unreachable, "\(path) is not a directory of its own (a symbolic link or a file): msg does not deliver through it")
            }
            throw SystemCalls.error(.unreachable, "cannot open \(path)")
        }
        if !SystemCalls.exists("\(root)/tmp") || !SystemCalls.exists("\(root)/new") { try makeDirectories(code: .unreachable) }
        let tmp = try open("tmp")
        do throws(MsgError) {
            return (tmp, try open("new"))
        } catch {
            close(tmp)
            throw error
        }
    }

    public func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> [DeliveryOutcome] {
        let directories: (tmp: Int32, new: Int32)
        do throws(MsgError) {
            directories = try openDirectories()
        } catch {
            return records.map { _ in .failed(error, retryAfter: nil) }
        }
        defer {
            close(directories.tmp)
            close(directories.new)
        }
        var outcomes = [DeliveryOutcome?](repeating: nil, count: records.count)
        var pending: [(index: Int, id: String, temporary: String)] = []
        var seen: Set<String> = []
        var random = SystemRandomNumberGenerator()
        for (i, r) in records.enumerated() {
            let m = r.message
            guard UUIDText.isCanonical(m.id) else {
                outcomes[i] = .failed(MsgError(.rejected, "id '\(m.id.prefix(60))' is not a UUID; it cannot name a file"), retryAfter: nil)
                continue
            }
            if isDelivered(m.id) || !seen.insert(m.id).inserted {
                outcomes[i] = .delivered(confirmed: false)
                continue
            }
            let temporary = "\(m.id).\(String(random.next(), radix: 36)).json"
            do throws(MsgError) {
                var text = r.deliveredJSON
                text.append(0x0A)
                let fd = openat(directories.tmp, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
                guard fd >= 0 else { throw SystemCalls.error(.unreachable, "cannot create \(root)/tmp/\(temporary)") }
                defer { close(fd) }
                do throws(MsgError) {
                    try SystemCalls.writeAll(fd, text, code: .unreachable, what: "\(root)/tmp/\(temporary)")
                } catch {
                    unlinkat(directories.tmp, temporary, 0)
                    throw error
                }
                pending.append((i, m.id, temporary))
            } catch {
                outcomes[i] = .failed(error, retryAfter: nil)
            }
        }
        if !pending.isEmpty {
            do throws(MsgError) {
                if syncfs(directories.tmp) != 0 { throw SystemCalls.error(.unreachable, "cannot sync \(root)") }
                for p in pending where renameat(directories.tmp, p.temporary, directories.new, "\(p.id).json") != 0 {
                    outcomes[p.index] = .failed(SystemCalls.error(.unreachable, "cannot move \(root)/tmp/\(p.temporary) into new/"), retryAfter: nil)
                    unlinkat(directories.tmp, p.temporary, 0)
                }
                try SystemCalls.fsync(directories.new, code: .unreachable, what: "\(root)/new")
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
        SystemCalls.exists("\(root)/new/\(id).json") || SystemCalls.exists("\(root)/cur/\(id).json")
    }
}

/// glibc's `syncfs(2)`, which its Swift module hides behind `_GNU_SOURCE`: one call
/// makes every file written so far durable, for the whole batch.
@_silgen_name("syncfs")
private func syncfs(_ fd: Int32) -> Int32

/// Registers the `file:` scheme.
@_cdecl("msg_plugin_register")
public func msgPluginRegister(_ abi: UInt32, _ registrar: UnsafeMutableRawPointer) -> Int32 {
    PluginRegistrar.register(abiVersion: abi, registrar: registrar, plugin: "FileDropTransport", version: MsgVersion.current) { r in
        r.transport(scheme: "file") { url throws(MsgError) in try FileDropTransport(url: url) }
    }
}
