import MsgKit

/// The one reading of a store URL that names a local file (`sqlite:`, `json:`, and
/// an inbox's `sqlite:`): `SCHEME:PATH` and `SCHEME:///ABSOLUTE` name the same file,
/// a host part (`SCHEME://NAME/…`) is refused, and a missing directory is never made.
///
/// Why: `sqlite://tmp/x/q.sqlite` (one slash too many) once meant `/x/q.sqlite`
/// at the filesystem's root, made with its directories, so an application and
/// msg's watch worked on two queues without a word.
public enum StoreFile {
    /// The file `url` names.
    /// - Throws: `usage` for a host part, naming the forms meant; `config` for no path
    ///   (`example` shows one).
    public static func path(_ url: PluginURL, example: String) throws(MsgError) -> String {
        if let host = url.authority, !host.isEmpty {
            let rest = host + url.path
            throw MsgError(.usage, "'\(url.text)': a \(url.scheme): file has no host part ('\(host)'); write \(url.scheme):/\(rest) for an absolute path or \(url.scheme):\(rest) for one relative to the current directory")
        }
        guard !url.path.isEmpty else { throw MsgError(.config, "the \(url.scheme): store needs a path, e.g. \(example)") }
        return url.path
    }

    /// Refuses a file whose directory is not there: msg makes no directory for a
    /// store but its own home (``Session``), as the file drop makes none without `parents=yes`.
    /// - Throws: `config` naming the directory.
    public static func requireDirectory(of path: String) throws(MsgError) {
        let directory = SystemCalls.directory(of: path)
        guard SystemCalls.isDirectory(directory) else {
            throw MsgError(.config, SystemCalls.exists(directory) ? "\(directory), the directory of store \(path), is not a directory"
                                 : "the directory \(directory) of store \(path) does not exist; create it (msg makes no directory for a store)")
        }
    }
}
