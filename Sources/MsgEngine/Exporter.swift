import MsgKit

/// `export`: messages (default: failed and dead) with their full history, as
/// ndjson, json or csv, to stdout or atomically to a file with a `FILE.sha256`
/// manifest that `sha256sum -c` accepts.
public struct Exporter {
    /// What to export and how.
    public struct Options: Sendable {
        public var query = Query(statuses: [.failed, .dead])
        public var format = OutputFormat.ndjson
        public var redactBody = false
        /// Write here (atomically, with a manifest) instead of stdout.
        public var out: String?
        public init() {}
    }

    private let store: any Store
    private let options: Options

    public init(store: any Store, options: Options) {
        self.store = store
        self.options = options
    }

    /// Writes the export. - Returns: the number of records. - Throws: store and file errors.
    public func run() throws(MsgError) -> Int {
        let output = ByteOutput(fd: options.out == nil ? 1 : -1, name: options.out ?? "standard output")
        let formatter = RecordFormatter(format: options.format == .table ? .ndjson : options.format, includeHistory: true, output: output,
                                        buffered: options.out != nil)
        var count = 0
        try store.list(options.query) { (m) throws(MsgError) -> Bool in
            var x = m
            if options.redactBody { x.body = "[redacted]" }
            try formatter.write(x)
            count += 1
            return true
        }
        try formatter.finish()
        guard let path = options.out else { return count }
        // The file and its manifest, each replaced atomically: the data first, so a
        // manifest never describes a file that is not there.
        let bytes = formatter.collected
        try SystemCalls.replaceAtomically(path, with: bytes, mode: 0o600, code: .storeIO)
        var hash = SHA256()
        hash.update(bytes)
        let name = path.split(separator: "/").last.map(String.init) ?? path
        try SystemCalls.replaceAtomically(path + ".sha256", with: Array("\(hash.hexDigest())  \(name)\n".utf8), mode: 0o600, code: .storeIO)
        return count
    }
}
