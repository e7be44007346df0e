import MsgKit

/// What `msg plugins` prints: one row per plugin file.
public struct PluginReport {
    /// One plugin and the schemes it registered.
    public struct Row: Sendable {
        public var name: String
        public var kind: String
        public var schemes: [String]
        public var version: String
        public var path: String
    }

    /// The rows, in registration order.
    public let rows: [Row]

    /// Groups registry entries by plugin file.
    public init(entries: [PluginRegistry.Entry], web: [WebServers.Entry] = WebServers.entries()) {
        var rows: [Row] = []
        let all = entries.map { ($0.plugin, $0.kind.rawValue, $0.scheme, $0.version, $0.path) } + web.map { ($0.plugin, "web", $0.scheme, $0.version, $0.path) }
        for e in all.map({ (plugin: $0.0, kind: $0.1, scheme: $0.2, version: $0.3, path: $0.4) }) {
            if let i = rows.firstIndex(where: { $0.path == e.path && $0.name == e.plugin }) {
                if !rows[i].schemes.contains(e.scheme) { rows[i].schemes.append(e.scheme) }
                if !rows[i].kind.split(separator: ",").contains(Substring(e.kind)) { rows[i].kind += ",\(e.kind)" }
            } else {
                rows.append(Row(name: e.plugin, kind: e.kind, schemes: [e.scheme], version: e.version, path: e.path))
            }
        }
        self.rows = rows
    }

    /// The directory part of a path (without its last slash).
    static func directory(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The file name of a path.
    static func file(_ path: String) -> String {
        path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
    }

    /// Writes the rows as ndjson or a table. - Throws: `storeIO` when the output fails.
    public func write(format: OutputFormat, output: ByteOutput, width: Int?) throws(MsgError) {
        if format == .table {
            // Where each plugin was found is what the view is for: never cut. The
            // directories head their plugins, whole on lines of their own, and the
            // rows name the files, so a table of the usual names fits 80 cells.
            let cells = rows.map { r in [r.name, r.kind, r.schemes.joined(separator: ","), r.version, Self.file(r.path)].map(TextTable.escaped) }
            let headers = ["NAME", "KIND", "SCHEMES", "VERSION", "FILE"]
            let table = TextTable(headers.indices.map { i in
                .fixed(headers[i], max(TextTable.displayWidth(headers[i]), cells.map { TextTable.displayWidth($0[i]) }.max() ?? 0))
            }, width: nil)
            // Each directory once, where its first plugin was found.
            var first: [String: Int] = [:]
            for (i, r) in rows.enumerated() where first[Self.directory(r.path)] == nil { first[Self.directory(r.path)] = i }
            let order = rows.indices.sorted { (first[Self.directory(rows[$0].path)] ?? 0, $0) < (first[Self.directory(rows[$1].path)] ?? 0, $1) }
            var directory: String?
            for (r, row) in order.map({ (rows[$0], cells[$0]) }) {
                let dir = Self.directory(r.path)
                if dir != directory {
                    output.write((directory == nil ? "" : "\n") + TextTable.escaped(dir) + ":\n" + table.header)
                    directory = dir
                }
                output.write(table.row(row))
            }
            if rows.isEmpty { output.write(table.header) }
            try output.flush()
            return
        }
        let writer = NDJSONWriter(output: output)
        for r in rows {
            try writer.write(.object([
                .init("name", .string(r.name)), .init("kind", .string(r.kind)),
                .init("schemes", .array(r.schemes.map { .string($0) })),
                .init("version", .string(r.version)), .init("path", .string(r.path)),
            ]))
        }
    }
}
