import ArgumentParser
import MsgEngine
import MsgKit

/// `msg queue show`: one message with its history.
struct QueueShowCommand: SessionCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Print one message with its history.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The message id.", completion: Completion.ids) var id: String
    @Option(help: "ndjson or table: a field a line, then the history (default: table on a terminal, else ndjson).")
    var format: OutputFormat?

    func validate() throws {
        if let format, format != .ndjson && format != .table { throw ValidationError("--format for one message is ndjson or table") }
    }

    func run(_ session: Session) throws {
        let m = try QueueOperations(store: try session.store(.read), reporter: session.reporter).show(id)
        guard (format ?? .automatic) == .table else { return try NDJSONWriter().write(m) }
        let out = ByteOutput()
        out.write(RecordSheet.text(m))
        try out.flush()
    }
}

/// `msg queue edit`: changes what a message says or where it goes, before it is sent.
struct QueueEditCommand: SessionCommand {
    static let configuration = CommandConfiguration(commandName: "edit", abstract: "Change to, body or headers of queued, held or failed messages.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var targets: TargetOptions
    @Option(help: "The new recipient.") var to: String?
    @Option(help: "The new body.") var body: String?
    @Option(name: .customLong("header"), help: ArgumentHelp("Set a header, repeatable.", valueName: "key=value"), transform: ArgumentValue.header)
    var headers: [Headers.Field] = []
    @Option(name: .customLong("remove-header"), help: "Remove a header, repeatable.") var removeHeaders: [String] = []

    func validate() throws {
        if to == nil && body == nil && headers.isEmpty && removeHeaders.isEmpty { throw ValidationError("nothing to change: give --to, --body, --header or --remove-header") }
        if to == "" { throw ValidationError("--to must not be empty") }
    }

    func run(_ session: Session) throws {
        let pairs = Headers(headers.map { ($0.key, $0.value) })
        try runChange(session, targets) { (q, ids) throws(MsgError) in
            try q.edit(ids, to: to, body: body, headers: pairs, removeHeaders: removeHeaders)
        }
    }
}

/// `msg queue stats`: counts per status and age, as Postfix's qshape.
struct QueueStatsCommand: SessionCommand {
    static let configuration = CommandConfiguration(commandName: "stats", abstract: "Count messages per status and age bucket.")
    @OptionGroup var global: GlobalOptions
    @Option(help: "ndjson, json, csv or table (default: table on a terminal, else ndjson).") var format: OutputFormat?

    func run(_ session: Session) throws {
        let rows = try QueueOperations(store: try session.store(.read), reporter: session.reporter).stats()
        let columns = ["total"] + QueueOperations.ageBuckets.map { "<\($0.name)" } + ["older"]
        // One row per status: its total, then its count per age bucket.
        let counts = rows.map { (status: $0.status.rawValue, counts: [$0.buckets.reduce(0, +)] + $0.buckets) }
        let out = ByteOutput()
        switch format ?? .automatic {
        case .table:
            let total = columns.indices.map { i in counts.reduce(0) { $0 + $1.counts[i] } }
            out.write("STATUS".padding(10) + columns.map { ($0 == "total" ? "TOTAL" : $0).padding(8) }.joined() + "\n")
            for (status, n) in counts + [("total", total)] {
                out.write(status.padding(10) + n.map { String($0).padding(8) }.joined() + "\n")
            }
        case .csv:
            out.write((["status"] + columns).joined(separator: ",") + "\r\n")
            for (status, n) in counts { out.write(([status] + n.map(String.init)).joined(separator: ",") + "\r\n") }
        case .json, .ndjson:
            var w = JSONWriter()
            let objects: [JSONValue] = counts.map { row in
                .object([.init("status", .string(row.status))] + zip(columns, row.counts).map { .init($0, .number(String($1))) })
            }
            if format == .json {
                w.value(.array(objects))
                w.raw("\n")
            } else {
                for object in objects {
                    w.value(object)
                    w.raw("\n")
                }
            }
            out.buffer.append(contentsOf: w.bytes)
        }
        try out.flush()
    }
}

/// `msg queue purge`: removes old finished messages.
struct QueuePurgeCommand: SessionCommand {
    static let configuration = CommandConfiguration(commandName: "purge", abstract: "Remove sent, delivered, read or dead messages not updated for a while.")
    @OptionGroup var global: GlobalOptions
    @Option(help: ArgumentHelp("Statuses to purge: comma-separated or repeated.", valueName: "list"),
            completion: Completion.statuses, transform: ArgumentValue.statuses)
    var status: [Set<Status>]
    @Option(name: .customLong("older-than"), help: "Only messages not updated for this long (e.g. 30d).", transform: ArgumentValue.duration)
    var olderThan: MsgDuration

    func run(_ session: Session) throws {
        let n = try QueueOperations(store: try session.store(), reporter: session.reporter).purge(statuses: status.union ?? [], olderThan: olderThan)
        if n > 0 { Diagnostics.say("purged \(n) message\(n == 1 ? "" : "s")") }
    }
}

extension String {
    /// The string padded with spaces to `width` (at least one space after it).
    func padding(_ width: Int) -> String { self + String(repeating: " ", count: max(1, width - count)) }
}
