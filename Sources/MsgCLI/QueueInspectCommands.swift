import ArgumentParser
import MsgEngine
import MsgKit

/// `msg queue show`: messages with their history, one by one.
struct QueueShowCommand: SessionCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Print messages with their history: the ids given, or on stdin.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var targets: TargetOptions
    @Option(help: "ndjson or table: a field a line, then the history (default: table on a terminal, else ndjson).")
    var format: OutputFormat?
    @Option(help: ArgumentHelp("What makes a destination, as flush --key (for why it waits).", valueName: "key"),
            transform: ArgumentValue.destinationKey)
    var key = DestinationKey.recipient

    func validate() throws {
        if let format, format != .ndjson && format != .table { throw ValidationError("--format for one message is ndjson or table") }
    }

    func run(_ session: Session) throws {
        let (ids, badLines) = try targets.resolve(session, .read, required: true)
        if try nothingGiven(ids, badLines: badLines, session) { return }
        let store = try session.store(.read)
        let operations = QueueOperations(store: store, reporter: session.reporter)
        let destinations = Destinations(store: store, key: key)
        let table = (format ?? session.console.format) == .table
        let writer = session.console.writer()
        let out = session.console.buffer()
        for (n, id) in (ids ?? []).enumerated() {
            let m = try operations.show(id)
            let why = try destinations.why(m)
            if table {
                out.write((n > 0 ? "\n" : "") + RecordSheet.text(m, waiting: why, policy: session.settings.retry))
            } else {
                // The record stays a record; why it waits goes to stderr.
                if let why { session.reporter.say("\(m.id) waits: \(why)") }
                try writer.write(m)
            }
        }
        try out.flush()
        try finish(badLines > 0 ? 65 : 0)
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

/// `msg queue stats`: counts per status and age, as Postfix's qshape; with
/// `--by destination`, per destination too.
struct QueueStatsCommand: SessionCommand {
    static let configuration = CommandConfiguration(commandName: "stats", abstract: "Count messages per status (and destination) and age bucket.")
    @OptionGroup var global: GlobalOptions
    @Option(help: "ndjson, json, csv or table (default: table on a terminal, else ndjson).") var format: OutputFormat?
    /// What a row of `queue stats` counts.
    enum Grouping: String, CaseIterable {
        case status, destination
    }

    @Option(help: ArgumentHelp("status, or destination: a row per destination and status, busiest first.", valueName: "grouping"),
            completion: .list(Grouping.allCases.map(\.rawValue)), transform: ArgumentValue.oneOf(Grouping.self))
    var by = Grouping.status
    @Option(help: ArgumentHelp("With --by destination: to, header:NAME (as flush --key).", valueName: "key"), transform: ArgumentValue.destinationKey)
    var key = DestinationKey.recipient

    func run(_ session: Session) throws {
        let operations = QueueOperations(store: try session.store(.read), reporter: session.reporter)
        let columns = ["total"] + QueueOperations.ageBuckets.map { "<\($0.name)" } + ["older"]
        // One row per status (and destination): its total, then its count per age bucket.
        let counts: [(labels: [String], counts: [Int])]
        let labels: [String]
        if by == .destination {
            labels = ["destination", "status"]
            counts = try operations.stats(by: key).map { ([$0.destination, $0.status.rawValue], [$0.buckets.reduce(0, +)] + $0.buckets) }
        } else {
            labels = ["status"]
            counts = try operations.stats().map { ([$0.status.rawValue], [$0.buckets.reduce(0, +)] + $0.buckets) }
        }
        let out = session.console.buffer()
        switch format ?? session.console.format {
        case .table:
            let total = columns.indices.map { i in counts.reduce(0) { $0 + $1.counts[i] } }
            let rows = counts.map { $0.labels + $0.counts.map(String.init) }
                + [["total"] + Array(repeating: "", count: labels.count - 1) + total.map(String.init)]
            out.write(TextTable.render(header: labels.map { $0.uppercased() } + columns.map { $0 == "total" ? "TOTAL" : $0 }, rows: rows))
        case .csv:
            out.write((labels + columns).joined(separator: ",") + "\r\n")
            for row in counts { out.write((row.labels.map(RecordFormatter.csvField) + row.counts.map(String.init)).joined(separator: ",") + "\r\n") }
        case .json, .ndjson:
            let objects: [JSONValue] = counts.map { row in
                .object(zip(labels, row.labels).map { .init($0, .string($1)) } + zip(columns, row.counts).map { .init($0, .number(String($1))) })
            }
            out.writeJSON(objects, asArray: format == .json)
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
    @Flag(name: .customLong("dry-run"), help: "Print the messages that would be removed and how many; remove nothing.") var dryRun = false

    func run(_ session: Session) throws {
        if dryRun {
            let store = try session.store(.read)
            let query = try QueueOperations(store: store, reporter: session.reporter).purgeQuery(statuses: status.union ?? [], olderThan: olderThan)
            let formatter = RecordFormatter(format: .ndjson, includeHistory: false, output: session.console.buffer(), width: nil)
            try Listing(query: query).write(from: store, formatter: formatter, includeHistory: false)
            let n = try store.count(query)
            return session.console.say("dry run: would purge \(n) message\(n == 1 ? "" : "s"); nothing changed")
        }
        let n = try QueueOperations(store: try session.store(), reporter: session.reporter).purge(statuses: status.union ?? [], olderThan: olderThan)
        if n > 0 { session.console.say("purged \(n) message\(n == 1 ? "" : "s")") }
    }
}

extension ByteOutput {
    /// Writes `values` as one JSON array (`--format json`) or one object a line (ndjson).
    func writeJSON(_ values: [JSONValue], asArray: Bool) {
        var w = JSONWriter()
        if asArray {
            w.value(.array(values))
            w.raw("\n")
        } else {
            for v in values {
                w.value(v)
                w.raw("\n")
            }
        }
        buffer.append(contentsOf: w.bytes)
    }
}
