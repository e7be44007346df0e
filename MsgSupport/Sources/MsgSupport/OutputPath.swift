#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// The one rule for every option that names a file msg writes (`--out`,
/// `--textfile`, `--events`, `--checkpoint-to`, keys, proofs): msg replaces or
/// appends to only a regular file of its own, or creates one where nothing is.
/// A FIFO or a character device (`/dev/null`, a terminal) is written in place,
/// as are `/dev/stdout`, `/dev/stderr` and `/dev/fd/N`, which name descriptors
/// the command already has. Anything else (a symbolic link, a directory, a block
/// device, a socket) is refused with one line, and left as it was.
public enum OutputPath {
    /// What `path` is to a writer.
    public enum Target: Equatable, Sendable {
        /// Nothing, or a regular file: written by msg's own means (a rename, an append).
        case file
        /// A descriptor open for writing in place, the caller's to close.
        case stream(Int32)
    }

    /// Classifies `path` for `option` (e.g. "--out"), opening it when it is a
    /// stream; `streams: false` refuses streams too (a key must be a file).
    /// - Throws: `usage` naming the option and what is at `path`; `code` when a
    ///   stream cannot be opened.
    public static func target(_ path: String, option: String, streams: Bool = true, code: MsgError.Code) throws(MsgError) -> Target {
        switch try check(path, option: option, streams: streams, code: code) {
        case .file:
            return .file
        case .stream:
            if let fd = descriptor(named: path) {
                let copy = fcntl(fd, F_DUPFD_CLOEXEC, 3)
                guard copy >= 0 else { throw SystemCalls.error(code, "\(option) \(path): cannot use it") }
                return .stream(copy)
            }
            // No O_CREAT, no O_TRUNC: what is there is written, never made anew.
            return .stream(try SystemCalls.open(path, O_WRONLY | O_NOCTTY | O_NOFOLLOW, code: code))
        }
    }

    /// What `path` is, checked under the rule without opening it (`.stream(-1)` for
    /// a stream), so a command can refuse before it starts its work.
    /// - Throws: as ``target``.
    @discardableResult
    public static func check(_ path: String, option: String, streams: Bool = true, code: MsgError.Code) throws(MsgError) -> Target {
        if descriptor(named: path) != nil {
            guard streams else { throw refusal(option, path, "names a descriptor, not a file") }
            return .stream(-1)
        }
        var st = stat()
        guard lstat(path, &st) == 0 else {
            if errno == ENOENT {
                let directory = SystemCalls.directory(of: path)
                // The command line's mistake (64), or the configuration's where the caller says so.
                guard SystemCalls.isDirectory(directory) else {
                    throw MsgError(code == .config ? .config : .usage, "\(option.isEmpty ? "" : option + " ")\(path): the directory \(directory) does not exist; make it first (mkdir -p '\(directory)')")
                }
                return .file
            }
            throw SystemCalls.error(code, "\(option) \(path): cannot look at it")
        }
        switch st.st_mode & S_IFMT {
        case S_IFREG:
            return .file
        case S_IFIFO, S_IFCHR:
            guard streams else { throw refusal(option, path, "is a \(kind(st.st_mode)), not a file") }
            return .stream(-1)
        default:
            throw refusal(option, path, "is a \(kind(st.st_mode)); msg writes only a regular file of its own\(streams ? ", a FIFO or a character device" : "")")
        }
    }

    /// Whether `path` holds nothing or a regular file (what a rename may replace).
    public static func namesAFile(_ path: String) -> Bool {
        (try? check(path, option: "", code: .usage)) == .file
    }

    /// Opens `path` for appending under the rule: a regular file (created `mode`
    /// when missing, never through a link) or a stream. - Throws: as ``target``.
    public static func openAppending(_ path: String, option: String, mode: mode_t, code: MsgError.Code) throws(MsgError) -> Int32 {
        switch try target(path, option: option, code: code) {
        case .stream(let fd):
            return fd
        case .file:
            let fd = try SystemCalls.open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NOCTTY, mode: mode, code: code)
            // What was looked at may have been swapped before the open: look again.
            var st = stat()
            guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
                close(fd)
                throw refusal(option, path, "is no longer a regular file")
            }
            return fd
        }
    }

    /// The descriptor `path` names when it is one the command already has.
    static func descriptor(named path: String) -> Int32? {
        switch path {
        case "/dev/stdout": return 1
        case "/dev/stderr": return 2
        default:
            for prefix in ["/dev/fd/", "/proc/self/fd/"] where path.hasPrefix(prefix) {
                guard let n = Int32(path.dropFirst(prefix.count)), n >= 0, fcntl(n, F_GETFD) >= 0 else { return nil }
                return n
            }
            return nil
        }
    }

    static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFLNK: return "symbolic link"
        case S_IFDIR: return "directory"
        case S_IFBLK: return "block device"
        case S_IFSOCK: return "socket"
        case S_IFIFO: return "FIFO"
        case S_IFCHR: return "character device"
        default: return "special file"
        }
    }

    static func refusal(_ option: String, _ path: String, _ what: String) -> MsgError {
        MsgError(.usage, "\(option.isEmpty ? "" : option + " ")\(path) \(what); nothing was written there")
    }
}
