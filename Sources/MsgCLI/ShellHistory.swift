#if canImport(Glibc)
@preconcurrency import Glibc
#endif
@preconcurrency import CReadline

/// The shell's history: `$MSG_HOME/history`, at most 1000 lines, owner-only,
/// written after every line so a killed shell keeps it; a line equal to the one
/// before is not kept twice.
struct ShellHistory {
    let path: String
    static let limit: Int32 = 1000

    func load() {
        using_history()
        stifle_history(Self.limit)
        _ = read_history(path)
    }

    func add(_ line: String) {
        guard !line.allSatisfy({ $0 == " " || $0 == "\t" }) else { return }
        if history_length > 0, let last = history_get(history_base + history_length - 1)?.pointee.line,
           String(cString: last) == line {
            return
        }
        add_history(line)
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        if fd >= 0 {
            fchmod(fd, 0o600)
            close(fd)
        }
        _ = write_history(path)
    }
}
