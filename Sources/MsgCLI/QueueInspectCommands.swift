import ArgumentParser
import MsgEngine
import MsgKit

/// `msg queue show`: one message with its history.
struct QueueShowCommand: SessionCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Print one message with its history.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The message id.") var id: String

    func run(_ session: Session) throws {
        let m = try QueueOperations(store: try session.store(.read), reporter: session.reporter).show(id)
        try NDJSONWriter().write(m)
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
    @Option(help: "table or ndjson (default: table on a terminal, else ndjson).") var format: OutputFormat?

    func run(_ session: Session) throws {
        let rows = try QueueOperations(store: try session.store(.read), reporter: session.reporter).stats()
        let names = QueueOperations.ageBuckets.map { "<\($0.name)" } + ["older"]
        let out = ByteOutput()
        if (format ?? .automatic) == .table {
            out.write(([("STATUS", 10)] + (["TOTAL"] + names).map { ($0, 8) }).map { $0.0.padding($0.1) }.joined() + "\n")
            for (status, buckets) in rows {
                out.write(status.rawValue.padding(10) + ([buckets.reduce(0, +)] + buckets).map { String($0).padding(8) }.joined() + "\n")
            }
            try out.flush()
            return
        }
        let writer = NDJSONWriter(output: out)
        for (status, buckets) in rows {
            var members: [JSONValue.Member] = [.init("status", .string(status.rawValue)), .init("total", .number(String(buckets.reduce(0, +))))]
            for (name, n) in zip(names, buckets) { members.append(.init(name, .number(String(n)))) }
            try writer.write(.object(members))
        }
    }
}

/// `msg queue purge`: removes old finished messages.
struct QueuePurgeCommand: SessionCommand {
    static let configuration = CommandConfiguration(commandName: "purge", abstract: "Remove sent, delivered, read or dead messages not updated for a while.")
    @OptionGroup var global: GlobalOptions
    @Option(help: ArgumentHelp("Statuses to purge: comma-separated or repeated.", valueName: "list"), transform: ArgumentValue.statuses)
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
