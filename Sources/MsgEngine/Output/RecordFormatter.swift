import MsgKit

/// Writes records one at a time in an ``OutputFormat``, streaming: memory does not
/// grow with the number of records.
public final class RecordFormatter {
    private let format: OutputFormat
    private let includeHistory: Bool
    private let output: ByteOutput
    private let ndjson: NDJSONWriter
    private var count = 0

    /// The record's fields (``RecordField``) as CSV columns, in reading order; the
    /// sender's lease is not among them.
    static let csvFields: [RecordField] = [.id, .status, .attempts, .to, .from, .body, .headers, .createdAt, .updatedAt,
                                           .notBefore, .nextAttemptAt, .expiresAt, .lastError, .history]
    /// The CSV header: one column per field, `last_error` as its code and message.
    public static let csvColumns = csvFields.flatMap { $0 == .lastError ? ["last_error_code", "last_error_message"] : [$0.key] }

    /// Where the formatted bytes go instead of `output`'s descriptor, in blocks.
    public typealias Sink = (_ bytes: [UInt8]) throws(MsgError) -> Void
    private let sink: Sink?

    /// A formatter to `output`, or to `sink` when given (a file being written
    /// atomically, say). A table fits `width` cells (nil: as wide as it likes),
    /// shows the last `idLength` characters of each id (``ShortID``), recipients
    /// whole up to `recipientWidth` cells (as much as 3/5 of the room left), and
    /// says when a message is next due relative to `now`.
    public init(format: OutputFormat, includeHistory: Bool, output: ByteOutput, sink: Sink? = nil,
                width: Int?, idLength: Int = 36, recipientWidth: Int? = nil, now: Timestamp = .now()) {
        self.format = format
        self.includeHistory = includeHistory
        self.output = output
        self.sink = sink
        self.ndjson = NDJSONWriter(output: output, flushEveryLine: false)
        self.showsCreated = width.map { $0 >= 120 } ?? true
        self.idLength = idLength
        self.table = TextTable(Self.tableColumns(showingCreated: showsCreated, idLength: idLength, recipientWidth: recipientWidth, width: width),
                               width: width)
        self.now = now
    }

    private let table: TextTable
    private let showsCreated: Bool
    private let idLength: Int
    private let now: Timestamp

    /// The columns a person reads at a terminal, as `postqueue -p` has them: when it
    /// is next due and why the last attempt failed beside what it is. Under 120
    /// cells the creation time gives its room to the others.
    static func tableColumns(showingCreated: Bool, idLength: Int, recipientWidth: Int? = nil, width: Int? = nil) -> [TextTable.Column] {
        let leading: [TextTable.Column] = [.fixed("ID", max(2, idLength)), .fixed("STATUS", 9), .fixed("ATT", 3)]
            + (showingCreated ? [.fixed("CREATED", 11)] : []) + [.fixed("NEXT", 7)]
        var to = TextTable.Column.flexible("TO", share: 3)
        if let recipientWidth {
            // The recipient whole where it fits in 3/5 of what the fixed columns leave.
            let used = leading.compactMap(\.width).reduce(0, +) + 2 * (leading.count + 2)
            let room = width.map { max(2, ($0 - used) * 3 / 5) } ?? recipientWidth
            to = .fixed("TO", max(2, min(recipientWidth, room)))
        }
        return leading + [to, .flexible("LAST ERROR", share: 3), .flexible("BODY", share: 2)]
    }

    private func tableRow(_ m: Message) -> String {
        let created = String(m.createdAt.description.dropFirst(5).prefix(11)).replacingOccurrences(of: "T", with: " ")
        let error = m.standingError.map { "\($0.code): \($0.message)" } ?? ""
        return table.row([ShortID.of(m.id, length: idLength), m.status.rawValue, String(m.attempts)] + (showsCreated ? [created] : [])
                         + [Self.next(m, now: now), m.to, error, m.body])
    }

    /// When a waiting message goes out: `in 4m`, `due`, or `-` (not waiting).
    static func next(_ m: Message, now: Timestamp) -> String {
        guard [.queued, .failed].contains(m.status) else { return "-" }
        guard let due = m.dueAt, due > now else { return "due" }
        return relative(due, now: now)
    }

    /// A time to come as a person reads it in a table: `in 4m`, `in 2h`, `now`.
    public static func relative(_ time: Timestamp, now: Timestamp) -> String {
        guard time > now else { return "now" }
        let seconds = (time.milliseconds - now.milliseconds + 999) / 1000
        for (unit, size) in [("d", Int64(86_400)), ("h", 3600), ("m", 60)] where seconds >= size {
            return "in \(seconds / size)\(unit)"
        }
        return "in \(seconds)s"
    }

    private func drain(always: Bool = false) throws(MsgError) {
        guard let sink else {
            try always ? output.flush() : output.flushIfLarge()
            return
        }
        guard always || output.buffer.count >= 1 << 16 else { return }
        try sink(output.buffer)
        output.buffer.removeAll(keepingCapacity: true)
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
            if count == 0 { output.write(table.header) }
            output.write(tableRow(m))
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
        try drain(always: true)
    }

    private func csvRow(_ m: Message) -> [UInt8] {
        var row: [UInt8] = []
        row.reserveCapacity(512)
        var w = JSONWriter(capacity: 256)
        func field(_ s: String, last: Bool = false) {
            Self.appendCSVField(s, to: &row)
            row.append(last ? 0x0D : UInt8(ascii: ","))
            if last { row.append(0x0A) }
        }
        func jsonField(_ body: (inout JSONWriter) -> Void, last: Bool = false) {
            w.bytes.removeAll(keepingCapacity: true)
            body(&w)
            field(String(decoding: w.bytes, as: UTF8.self), last: last)
        }
        for f in Self.csvFields {
            let last = f == Self.csvFields.last
            switch f {
            case .id: field(m.id, last: last)
            case .to: field(m.to, last: last)
            case .from: field(m.from ?? "", last: last)
            case .body: field(m.body, last: last)
            case .headers:
                if m.headers.isEmpty { field("", last: last) } else {
                    jsonField({ $0.value(.object(m.headers.map { .init($0.key, .string($0.value)) })) }, last: last)
                }
            case .status: field(m.status.rawValue, last: last)
            case .attempts: field(String(m.attempts), last: last)
            case .createdAt: field(m.createdAt.description, last: last)
            case .updatedAt: field(m.updatedAt.description, last: last)
            case .notBefore: field(m.notBefore?.description ?? "", last: last)
            case .nextAttemptAt: field(m.nextAttemptAt?.description ?? "", last: last)
            case .expiresAt: field(m.expiresAt?.description ?? "", last: last)
            case .lastError:
                field(m.lastError?.code ?? "")
                field(m.lastError?.message ?? "", last: last)
            case .history: if includeHistory { jsonField({ m.writeHistory(to: &$0) }, last: last) } else { field("", last: last) }
            case .lease: break
            }
        }
        return row
    }

    /// Appends a CSV field, quoted when it holds a comma, quote, CR or LF (RFC 4180).
    static func appendCSVField(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { utf8 in
            let needsQuotes = utf8.contains { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 0x0A || $0 == 0x0D }
            guard needsQuotes else {
                out.append(contentsOf: utf8)
                return
            }
            out.append(UInt8(ascii: "\""))
            for byte in utf8 {
                out.append(byte)
                if byte == UInt8(ascii: "\"") { out.append(byte) }
            }
            out.append(UInt8(ascii: "\""))
        }
    }

    /// Quotes a CSV field when it holds a comma, quote, CR or LF (RFC 4180).
    public static func csvField(_ s: String) -> String {
        var out: [UInt8] = []
        appendCSVField(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

}
