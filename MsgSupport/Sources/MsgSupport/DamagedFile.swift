#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// Setting a damaged store file aside (as Postfix's `corrupt` queue) and finding
/// the files set aside beside a store.
///
/// A damaged file is renamed to `PATH.corrupt-<UTC time>` (for instance
/// `queue.sqlite.corrupt-20261123T085501.123Z`), never over an existing file, and
/// stays there until the user moves it away: while it is there, msg says so on
/// every command (``Store/setAside()``).
public enum DamagedFile {
    /// The infix of every name a damaged file is given.
    public static let marker = ".corrupt-"

    /// The name `path` is set aside under at `time`: `path`, `infix`, the time.
    public static func asideName(_ path: String, at time: Timestamp, infix: String = marker) -> String {
        // RFC 3339 without '-' and ':' (ISO 8601 basic form): readable, sortable, no colons.
        let stamp = time.description.filter { $0 != "-" && $0 != ":" }
        return path + infix + stamp
    }

    /// Renames `path` aside, its companion files (`path + suffix`, such as SQLite's
    /// `-wal`) first, each to the aside name plus the same suffix. Never replaces an
    /// existing file. The caller makes sure `path` is still the file it found damaged.
    /// - Returns: the new name of `path`.
    /// - Throws: `code` when `path` cannot be renamed (companions are best effort).
    public static func moveAside(_ path: String, companions: [String] = [], code: MsgError.Code) throws(MsgError) -> String {
        var aside = asideName(path, at: .now())
        var n = 1
        while SystemCalls.exists(aside) {
            n += 1
            aside = asideName(path, at: .now()) + "-\(n)"
        }
        // Companions first: a new store made at `path` the moment it is free must not
        // find the damaged file's journal beside it.
        var moved: [String] = []
        for suffix in companions where SystemCalls.exists(path + suffix) {
            if SystemCalls.renameNoReplace(path + suffix, aside + suffix) { moved.append(suffix) }
        }
        guard SystemCalls.renameNoReplace(path, aside) else {
            let error = SystemCalls.error(code, "cannot move \(path) aside to \(aside)")
            // The journal belongs with its file: put it back.
            for suffix in moved { _ = SystemCalls.renameNoReplace(aside + suffix, path + suffix) }
            throw error
        }
        try SystemCalls.fsyncDirectory(SystemCalls.directory(of: path), code: code)
        return aside
    }

    /// The files set aside beside `path`, oldest first (companions left out).
    public static func setAside(besides path: String, companions: [String] = []) -> [String] {
        let dir = SystemCalls.directory(of: path)
        let prefix = (path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path) + marker
        return SystemCalls.names(in: dir)
            .filter { name in name.hasPrefix(prefix) && !companions.contains { name.hasSuffix($0) } }
            .sorted()
            .map { dir == "." && !path.hasPrefix("./") ? $0 : "\(dir)/\($0)" }
    }

    /// The error for a store that does not exist, opened for reading: it names the
    /// damaged files set aside where the store was, if any.
    public static func noStore(at path: String, companions: [String] = []) -> MsgError {
        if let last = setAside(besides: path, companions: companions).last {
            return MsgError(.storeIO, "there is no store at \(path): it was found damaged and set aside as \(last), which holds its messages (msg-record(5), DAMAGED STORES)")
        }
        return MsgError(.storeIO, "there is no store at \(path): nothing has been queued there yet (msg queue add creates it); check --store or MSG_STORE")
    }
}
