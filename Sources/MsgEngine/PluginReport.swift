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
    public init(entries: [PluginRegistry.Entry]) {
        var rows: [Row] = []
        for e in entries {
            if let i = rows.firstIndex(where: { $0.path == e.path && $0.name == e.plugin }) {
                if !rows[i].schemes.contains(e.scheme) { rows[i].schemes.append(e.scheme) }
                if !rows[i].kind.split(separator: ",").contains(Substring(e.kind.rawValue)) { rows[i].kind += ",\(e.kind.rawValue)" }
            } else {
                rows.append(Row(name: e.plugin, kind: e.kind.rawValue, schemes: [e.scheme], version: e.version, path: e.path))
            }
        }
        self.rows = rows
    }

    /// Writes the rows as ndjson or a table. - Throws: `storeIO` when the output fails.
    public func write(format: OutputFormat, output: ByteOutput, width: Int?) throws(MsgError) {
        if format == .table {
            let table = TextTable([.fixed("NAME", 17), .fixed("KIND", 18), .fixed("SCHEMES", 18), .fixed("VERSION", 7),
                                   .flexible("PATH", share: 1)], width: width)
            output.write(table.header)
            let pathWidth = table.widths.last ?? 0
            for r in rows {
                output.write(table.row([r.name, r.kind, r.schemes.joined(separator: ","), r.version, TextTable.fitKeepingEnd(r.path, pathWidth)]))
            }
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
