import ArgumentParser
import MsgEngine
import MsgKit

/// The filters of `queue ls` and `queue count`.
struct FilterOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Only these statuses: comma-separated or repeated (queued,failed…), or all.", valueName: "list"),
            completion: Completion.statuses, transform: ArgumentValue.statuses)
    var status: [Set<Status>] = []

    @Option(help: "Only messages to this recipient.") var to: String?

    @Option(help: "Only messages created since this time (RFC 3339, a date, or an age such as 1h).", transform: ArgumentValue.time)
    var since: Timestamp?

    @Option(parsing: .unconditional, help: "At most this many messages.") var limit: Int?

    func validate() throws {
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
    }

    /// The store query, restricted to the ids on stdin when it is not a terminal and
    /// holds any (so `msg queue add | msg queue ls` lists what was just stored).
    /// - Returns: the query and the number of bad stdin lines.
    /// - Throws: `badInput` when stdin cannot be read.
    func queryWithTargets() throws(MsgError) -> (Query, Int) {
        var q = query()
        let invocation = Invocation.current
        guard !invocation.inputIsTerminal else { return (q, 0) }
        var reader = NDJSONReader(fd: invocation.input)
        let targets = try TargetReader.read(&reader, reporter: invocation.reporter)
        if !targets.ids.isEmpty || targets.badLines > 0 { q.ids = Set(targets.ids) }
        return (q, targets.badLines)
    }

    /// The store query.
    func query() -> Query {
        Query(statuses: status.union, to: to, since: since, limit: limit)
    }
}
