#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// A damaged store: checked before the first write when a reader found it damaged,
/// set aside by a command that writes (what still reads carried into a new store,
/// ``Salvage``), reported beside it by one that only reads.
extension SQLiteStore: DamagedFiles {
    /// The file a command that only reads leaves beside a store it found damaged
    /// (`PATH.damaged`, saying when and how): it may not set the store aside, but
    /// the next command that writes must not write into it unchecked.
    static func reportName(_ path: String) -> String { path + ".damaged" }

    /// Before the first write into a store a reader found damaged: every page is
    /// checked (`PRAGMA quick_check`, 0.55 s at a million records, too slow for
    /// every command). Damage sets the store aside (``guarded(_:)``) and nothing is
    /// written; a store that checks out loses the report and is used.
    func check() throws(MsgError) {
        let s = try db.statement("PRAGMA quick_check(1)")
        defer { s.reset() }
        guard try s.step("checking it, as a reader found it damaged") else { return }
        let verdict = String(decoding: s.bytes(0), as: UTF8.self)
        guard verdict == "ok" else {
            // "*** in database main ***\nPage 1839: btreeInitPage() returns error code 11": one line.
            let said = verdict.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).filter { !$0.hasPrefix("***") }.joined(separator: "; ")
            throw MsgError(.corrupt, "store \(path) is damaged (\(said.prefix(200))), as a command that read it found")
        }
        _ = unlink(Self.reportName(path))
    }

    public func setAside() -> [String] {
        DamagedFile.setAside(besides: path, companions: ["-wal", "-shm"])
    }

    /// Runs `body`; when the database turns out to be damaged, sets it aside (when
    /// this store may) and says where.
    func guarded<R>(_ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        do throws(MsgError) {
            return try body()
        } catch where error.code == .corrupt {
            throw moveAside(error)
        }
    }

    /// Sets the damaged file aside if it is a msg store, this is a writing command,
    /// and the file at `path` is still the one found damaged; then carries what can
    /// still be read into a new store at `path` (``Salvage``). A command that only
    /// reads leaves a report instead (``reportName(_:)``), so the next writer checks.
    private func moveAside(_ error: MsgError) -> MsgError {
        func say(_ what: String) -> MsgError { MsgError(.corrupt, "\(error.message); \(what)", underlying: error.underlying) }
        guard db.access == .write else {
            Self.report(path, error)
            return say("the next msg command that writes to it will check it, set it aside and carry what still reads into a new store")
        }
        guard case .sqlite(ours: true, _, _)? = db.header() else {
            return say("it does not look like a msg store, so msg left it as it is")
        }
        do throws(MsgError) {
            return try SystemCalls.withDirectoryLock(SystemCalls.directory(of: path), code: .corrupt) { () throws(MsgError) -> MsgError in
                // Under the lock, so no other msg process moves a file meanwhile.
                guard db.isStillAtPath() else {
                    return say("another msg process has set it aside already, so nothing was moved; run the command again to use the new store")
                }
                let aside = try DamagedFile.moveAside(path, companions: ["-wal", "-shm"], code: .corrupt)
                _ = unlink(Self.reportName(path))
                let salvage: (carried: Int, complete: Bool)
                do throws(MsgError) {
                    salvage = try Salvage.run(from: aside, into: path)
                } catch {
                    return say("it was moved to \(aside), which holds its messages; carrying them into a new store failed (\(error.message)); msg-record(5), DAMAGED STORES, says how to recover them")
                }
                let n = salvage.carried
                let carried = n == 0 ? "it was moved to \(aside), which holds its messages: none of them still reads (msg-record(5), DAMAGED STORES, says how to recover them)"
                    : "it was moved to \(aside) and the \(n) record\(n == 1 ? "" : "s") that still read \(n == 1 ? "was" : "were") carried into a new store at \(path)"
                    + (salvage.complete ? "" : "; \(aside) may hold more (msg-record(5), DAMAGED STORES)")
                return say(carried + "; what this command was writing when it met the damage was not stored: run it again")
            }
        } catch {
            return say("it could not be set aside (\(error.message))")
        }
    }

    /// Leaves the report of a reader that found `path` damaged; best effort (a
    /// reader may not be allowed to write in the store's directory).
    static func report(_ path: String, _ error: MsgError) {
        let name = reportName(path)
        guard let fd = try? SystemCalls.createExclusive(name, code: .storeIO) else { return }
        defer { close(fd) }
        _ = try? SystemCalls.writeAll(fd, Array("\(Timestamp.now()) \(error.message)\n".utf8), code: .storeIO, what: name)
    }
}
