import MsgKit

/// How a listing is written (`--format`).
public enum OutputFormat: String, Sendable, CaseIterable {
    case ndjson, json, csv, table

    /// `table` on a terminal, `ndjson` otherwise.
    public static var automatic: OutputFormat { Diagnostics.stdoutIsTerminal ? .table : .ndjson }
}

/// Writes records one at a time in an ``OutputFormat``, streaming: memory does not
/// grow with the number of records.
public final class RecordFormatter {
    private let format: OutputFormat
    private let includeHistory: Bool
    private let output: ByteOutput
    private let ndjson: NDJSONWriter
    private var count = 0

    /// The stable CSV columns, in order.
    public static let csvColumns = ["id", "status", "attempts", "to", "from", "body", "headers", "created_at", "updated_at",
                                    "not_before", "next_attempt_at", "last_error_code", "last_error_message", "history"]

    private let buffered: Bool
    /// Everything written, when `buffered` (for a file written atomically at the end).
    public private(set) var collected: [UInt8] = []

    /// A formatter to `output` (standard output by default). `buffered`: keep
    /// everything in ``collected`` instead of writing it out.
    public init(format: OutputFormat, includeHistory: Bool, output: ByteOutput = ByteOutput(), buffered: Bool = false) {
        self.format = format
        self.includeHistory = includeHistory
        self.output = output
        self.buffered = buffered
        self.ndjson = NDJSONWriter(output: output, flushEveryLine: false)
    }

    private func drain() throws(MsgError) {
        if buffered {
            collected.append(contentsOf: output.buffer)
            output.buffer.removeAll(keepingCapacity: true)
        } else {
            try output.flushIfLarge()
        }
    }

    /// Writes one record. - Throws: `storeIO` when the output fails.
    public func write(_ m: Message) throws(MsgError) {
        defer { count += 1 }
        switch format {
        case .ndjson:
            var w = JSONWriter()
            m.write(to: &w, includeHistory: includeHistory)
            output.write(w.bytes)
            output.write([0x0A])
        case .json:
            output.write(count == 0 ? "[\n" : ",\n")
            var w = JSONWriter()
            m.write(to: &w, includeHistory: includeHistory)
            output.write(w.bytes)
        case .csv:
            if count == 0 { output.write(Self.csvColumns.joined(separator: ",") + "\r\n") }
            output.write(csvRow(m))
        case .table:
            if count == 0 { output.write(Self.tableRow(["ID", "STATUS", "ATT", "CREATED", "TO", "BODY"])) }
            output.write(Self.tableRow([m.id, m.status.rawValue, String(m.attempts), m.createdAt.description,
                                        Self.clip(m.to, 20), Self.clip(m.body, 40)]))
        }
        try drain()
    }

    /// Whether records can be written from their stored JSON text (``writeJSON(_:)``).
    public var acceptsJSON: Bool { format == .ndjson }

    /// Writes one record's stored JSON text (ndjson only). - Throws: `storeIO`.
    public func writeJSON(_ json: UnsafeBufferPointer<UInt8>) throws(MsgError) {
        count += 1
        try ndjson.writeRaw(json)
    }

    /// Ends the listing (closes a JSON array; writes a header for an empty CSV).
    /// - Throws: `storeIO` when the output fails.
    public func finish() throws(MsgError) {
        switch format {
        case .json: output.write(count == 0 ? "[]\n" : "\n]\n")
        case .csv where count == 0: output.write(Self.csvColumns.joined(separator: ",") + "\r\n")
        default: break
        }
        if buffered {
            collected.append(contentsOf: output.buffer)
            output.buffer.removeAll()
        } else {
            try output.flush()
        }
    }

    private func csvRow(_ m: Message) -> String {
        func json(_ body: (inout JSONWriter) -> Void) -> String {
            var w = JSONWriter()
            body(&w)
            return String(decoding: w.bytes, as: UTF8.self)
        }
        let headers = m.headers.isEmpty ? "" : json { w in
            w.value(.object(m.headers.map { .init($0.key, .string($0.value)) }))
        }
        let history = includeHistory ? json { w in
            w.raw("[")
            for (i, e) in m.history.enumerated() {
                if i > 0 { w.raw(",") }
                e.write(to: &w)
            }
            w.raw("]")
        } : ""
        let fields = [m.id, m.status.rawValue, String(m.attempts), m.to, m.from ?? "", m.body, headers,
                      m.createdAt.description, m.updatedAt.description, m.notBefore?.description ?? "",
                      m.nextAttemptAt?.description ?? "", m.lastError?.code ?? "", m.lastError?.message ?? "", history]
        return fields.map(Self.csvField).joined(separator: ",") + "\r\n"
    }

    /// Quotes a CSV field when it holds a comma, quote, CR or LF (RFC 4180).
    public static func csvField(_ s: String) -> String {
        guard s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    private static let widths = [36, 9, 3, 24, 20, 0]

    private static func tableRow(_ cells: [String]) -> String {
        var line = ""
        for (i, cell) in cells.enumerated() {
            line += cell
            if widths[i] > 0 { line += String(repeating: " ", count: max(1, widths[i] - cell.count + 2)) }
        }
        return line + "\n"
    }

    private static func clip(_ s: String, _ width: Int) -> String {
        let flat = String(s.map { $0 == "\n" || $0 == "\r" || $0 == "\t" ? " " : $0 })
        return flat.count <= width ? flat : String(flat.prefix(width - 1)) + "…"
    }
}
