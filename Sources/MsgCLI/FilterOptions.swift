import ArgumentParser
import MsgEngine
import MsgKit

/// The filters of `queue ls` and `queue count`.
struct FilterOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Only these statuses, comma-separated (queued,failed…).", valueName: "list"))
    var status: String?

    @Option(help: "Only messages to this recipient.") var to: String?

    @Option(help: "Only messages created since this time (RFC 3339, or an age such as 1h).") var since: String?

    @Option(help: "At most this many messages.") var limit: Int?

    func validate() throws {
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
        do { _ = try query() } catch { throw ValidationError(error.message) }
    }

    /// The store query, restricted to the ids on stdin when it is not a terminal and
    /// holds any (so `msg queue add | msg queue ls` lists what was just stored).
    /// - Returns: the query and the number of bad stdin lines.
    /// - Throws: `badInput` when stdin cannot be read.
    func queryWithTargets() throws(MsgError) -> (Query, Int) {
        var q = try query()
        let invocation = Invocation.current
        guard !invocation.inputIsTerminal else { return (q, 0) }
        var reader = NDJSONReader(fd: invocation.input)
        let targets = try TargetReader.read(&reader, reporter: invocation.reporter)
        if !targets.ids.isEmpty || targets.badLines > 0 { q.ids = Set(targets.ids) }
        return (q, targets.badLines)
    }

    /// The store query. - Throws: `badInput` for an unknown status or a bad time.
    func query() throws(MsgError) -> Query {
        Query(statuses: try status.map { (s) throws(MsgError) in try Status.parseList(s) }, to: to,
              since: try since.map { (s) throws(MsgError) in try TimeArgument.parse(s) }, limit: limit)
    }
}
