import MsgKit
import MsgSupport

/// `export`: messages (default: failed and dead) with their full history, as
/// ndjson, json or csv, to stdout or atomically to a file with a `FILE.sha256`
/// manifest that `sha256sum -c` accepts (a FIFO or a device is written in place,
/// without one: ``OutputPath``).
public struct Exporter {
    /// What to export and how.
    public struct Options: Sendable {
        public var query = Query(statuses: [.failed, .dead])
        public var format = OutputFormat.ndjson
        public var redactBody = false
        /// Write here (atomically, with a manifest) instead of stdout.
        public var out: String?
        /// With `out`: `out.proof` too, the records' inclusion proofs against a
        /// checkpoint signed by this private key (``LedgerExportProof``).
        public var proofKey: [UInt8]?
        public init() {}
    }

    private let store: any Store
    private let options: Options
    private let console: Console

    /// An export of `store`'s records; to the console's output unless `options.out`.
    public init(store: any Store, options: Options, console: Console) {
        self.store = store
        self.options = options
        self.console = console
    }

    /// Writes the export, streaming: to a file, through a temporary file hashed as it
    /// is written, so memory does not grow with the export.
    /// - Returns: the number of records. - Throws: store and file errors; then an
    ///   existing `--out` file and its manifest are left as they were.
    public func run(progress: Progress? = nil) throws(MsgError) -> Int {
        if options.proofKey != nil, let path = options.out, !OutputPath.namesAFile(path) {
            throw MsgError(.usage, "--proof needs --out to name a regular file, for its .proof and .sha256 beside it: \(path) is none")
        }
        guard let seed = options.proofKey, let path = options.out else {
            var none: [String]?
            return try export(progress, ids: &none)
        }
        guard let ledger = store.capabilities.journal else {
            throw MsgError(.config, "--proof: this store keeps no ledger (the sqlite:, json: and postgres: stores do)")
        }
        // The records and the ledger they are proven in, read in one snapshot.
        return try ledger.ledgerRead { () throws(MsgError) -> Int in
            var ids: [String]? = []
            let count = try export(progress, ids: &ids)
            try LedgerExportProof.write(ledger, ids: ids ?? [], seed: seed, to: path + ".proof")
            return count
        }
    }

    /// The export, with the ids written into `ids` when it is not nil.
    private func export(_ progress: Progress?, ids: inout [String]?) throws(MsgError) -> Int {
        guard let path = options.out else {
            let formatter = RecordFormatter(format: options.format == .table ? .ndjson : options.format, includeHistory: true,
                                            output: console.buffer(), width: nil)
            let count = try write(formatter, progress, ids: &ids)
            try formatter.finish()
            return count
        }
        let file = try OutputFile(path, option: "--out", code: .storeIO)
        let hash = try StreamingDigest()
        let formatter = RecordFormatter(format: options.format == .table ? .ndjson : options.format, includeHistory: true,
                                        output: ByteOutput(fd: -1, name: path), sink: { (bytes) throws(MsgError) in
            hash.update(bytes)
            try file.write(bytes)
        }, width: nil)
        let count = try write(formatter, progress, ids: &ids)
        try formatter.finish()
        // The file and its manifest, each replaced atomically: the data first, so a
        // manifest never describes a file that is not there.
        try file.commit()
        // A FIFO or a device is written in place, and gets no manifest beside it.
        guard !file.isStream else { return count }
        try OutputFile.write(path + ".sha256", Array(Self.manifestLine(try hash.finish().hex, path).utf8), option: "--out's manifest",
                             streams: false, code: .storeIO)
        return count
    }

    /// The manifest's line for `path` as given (`sha256sum -c sub/x.csv.sha256` checks
    /// from where the export ran, an absolute path from anywhere), in GNU sha256sum's
    /// format: a name holding a backslash or a newline is escaped, the line
    /// starting with a backslash.
    static func manifestLine(_ digest: String, _ path: String) -> String {
        guard path.unicodeScalars.contains(where: { $0 == "\\" || $0 == "\n" }) else { return "\(digest)  \(path)\n" }
        var escaped = ""
        for c in path.unicodeScalars {
            switch c {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(c)
            }
        }
        return "\\\(digest)  \(escaped)\n"
    }

    private func write(_ formatter: RecordFormatter, _ progress: Progress?, ids: inout [String]?) throws(MsgError) -> Int {
        var count = 0
        defer { progress?.finish() }
        if let progress, progress.isShown { progress.total = try store.count(options.query) }
        try store.list(options.query) { (r) throws(MsgError) -> Bool in
            var x = r.message
            if options.redactBody { x.body = "[redacted]" }
            try formatter.write(x)
            ids?.append(x.id)
            count += 1
            if count & 1023 == 0 { progress?.update(count) }
            return true
        }
        return count
    }
}
