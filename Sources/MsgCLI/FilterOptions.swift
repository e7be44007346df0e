import ArgumentParser
import MsgEngine
import MsgKit

/// The one filter of `queue ls`, `count`, `rm`, `hold` and `release` (what `ls`
/// lists, `ls | retry` retries): status and a limit with ``MatchOptions``.
struct FilterOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Only these statuses: comma-separated or repeated (queued,failed…), or all.", valueName: "list"),
            completion: Completion.statuses, transform: ArgumentValue.statuses)
    var status: [Set<Status>] = []

    @OptionGroup var match: MatchOptions

    @Option(parsing: .unconditional, help: "At most this many messages.", transform: ArgumentValue.count(from: 1)) var limit: Int?

    /// Whether any filter was given (an action then selects by it).
    var isGiven: Bool { !status.isEmpty || limit != nil || match.isGiven }

    /// What the store's query cannot ask.
    func filter() -> MessageFilter { match.filter() }

    /// The listing of the filter.
    func listing() -> Listing { match.listing(statuses: status.union, limit: limit) }

    /// The store query, restricted to the ids given as arguments, else to those on
    /// stdin when it is a pipe or a file (so `msg queue add | msg queue ls` lists what
    /// was just stored), as every command that takes ids (``TargetOptions``).
    /// - Returns: the query, nil when stdin named no message (then nothing is
    ///   listed), and the number of bad stdin lines.
    /// - Throws: `badInput` when stdin cannot be read; `notFound` or `usage` for a
    ///   part of an id that names none or several.
    func queryWithTargets(_ targets: TargetOptions, _ session: Session) throws(MsgError) -> (Query?, Int) {
        var q = query()
        let (ids, badLines) = try targets.resolve(session, .read)
        guard let ids else { return (q, 0) }
        guard !ids.isEmpty else { return (nil, badLines) }
        q.ids = Set(ids)
        return (q, badLines)
    }

    /// The store query.
    func query() -> Query { listing().query }
}
