import ArgumentParser
import MsgEngine
import MsgKit

/// `msg queue ls`: lists stored messages in FIFO order.
struct QueueListCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List stored messages in FIFO order (created_at, then id).",
        discussion: """
        Only the messages given as ids, or, when stdin is a pipe or a file, those it
        names (records, {"id":…} objects or bare ids, one per line), and none when it
        names none. So `msg queue add < in | msg queue ls` lists what was just stored.
        """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var targets: TargetOptions
    @OptionGroup var filters: FilterOptions
    @Option(help: "ndjson, json, csv or table (default: table on a terminal, else ndjson).") var format: OutputFormat?
    @Flag(help: "Include each record's history (not in a table).") var history = false

    func validate() throws {
        if history && format == .table { throw ValidationError("--history does not fit in a table; use --format ndjson, json or csv") }
    }

    func run(_ session: Session) throws {
        let (given, badLines) = try filters.queryWithTargets(targets, session)
        guard let query = given else { return try _ = nothingGiven([], badLines: badLines, session) }
        let store = try session.store(.read)
        let chosen = format ?? session.console.format
        // A table shows as much of each id as makes it unique in the store, and
        // recipients whole where they fit.
        let measured = chosen == .table ? try ShortID.measure(store) : (idLength: 36, recipientWidth: 0)
        let formatter = RecordFormatter(format: chosen, includeHistory: history, output: session.console.buffer(), width: session.console.width,
                                        idLength: measured.idLength, recipientWidth: chosen == .table ? measured.recipientWidth : nil)
        try Listing(query: query, filter: filters.filter()).write(from: store, formatter: formatter, includeHistory: history)
        try finish(badLines > 0 ? 65 : 0)
    }
}

/// `msg queue count`: the number of messages `ls` would list.
struct QueueCountCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "count",
        abstract: "Print the number of stored messages matching the filters."
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var targets: TargetOptions
    @OptionGroup var filters: FilterOptions

    func run(_ session: Session) throws {
        let (given, badLines) = try filters.queryWithTargets(targets, session)
        let n = try given.map { (query) throws(MsgError) in try Listing(query: query, filter: filters.filter()).count(in: session.store(.read)) } ?? 0
        let out = session.console.buffer()
        out.write("\(n)\n")
        try out.flush()
        if given == nil, try nothingGiven([], badLines: badLines, session) { return }
        try finish(badLines > 0 ? 65 : 0)
    }
}
