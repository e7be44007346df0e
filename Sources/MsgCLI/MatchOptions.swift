import ArgumentParser
import MsgEngine
import MsgKit

/// What a message must be to match, beside its status: recipient, header, last
/// error code, attempts, creation time, last update. Shared by `queue ls`,
/// `count`, `rm`, `hold`, `release` (with `--status` and `--limit`, as
/// ``FilterOptions``), `flush` and `retry` (whose statuses are their own).
struct MatchOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Only messages to this recipient, or to those a shell pattern matches (*@example.com).", valueName: "recipient"))
    var to: String?

    @Option(help: "Only messages created since this time (RFC 3339, a date, or an age such as 1h).", transform: ArgumentValue.time)
    var since: Timestamp?

    @Option(help: "Only messages created before this time (RFC 3339, a date, or an age such as 1h: older than that).",
            transform: ArgumentValue.time)
    var until: Timestamp?

    @Option(name: .customLong("updated-before"), help: ArgumentHelp("Only messages last changed before this time (or an age: untouched for that long).", valueName: "time"),
            transform: ArgumentValue.time)
    var updatedBefore: Timestamp?

    @Option(help: ArgumentHelp("Only messages with this header (NAME), or with this value (NAME=VALUE).", valueName: "name[=value]"),
            transform: ArgumentValue.headerMatch)
    var header: (name: String, value: String?)?

    @Option(help: ArgumentHelp("Only failed or dead messages whose last error has this code (\(MessageFilter.errorCodes.joined(separator: ", "))), or none: the others.", valueName: "code"),
            completion: .list(MessageFilter.errorCodes + ["none"]), transform: ArgumentValue.errorMatch)
    var error: MessageFilter.ErrorMatch?

    @Option(name: .customLong("min-attempts"), help: "Only messages with at least this many counted attempts.", transform: ArgumentValue.count(from: 1))
    var minAttempts: Int?

    func validate() throws {
        if to == "" { throw ValidationError("--to must not be empty") }
    }

    /// Whether any of these was given.
    var isGiven: Bool {
        to != nil || since != nil || until != nil || updatedBefore != nil || header != nil || error != nil || minAttempts != nil
    }

    /// What the store's query cannot ask.
    func filter() -> MessageFilter {
        var f = MessageFilter(lastError: error, minAttempts: minAttempts)
        if let to, MessageFilter.isPattern(to) { f.toPattern = to }
        f.header = header
        return f
    }

    /// The ids a command that sends (`flush`, `retry`) acts on: those `given`
    /// narrowed by the filter, or without them every one in `statuses` it matches
    /// (at most `limit`, in FIFO order); `given` as it is without a filter.
    /// - Throws: store errors.
    func narrow(_ given: [String]?, statuses: Set<Status>, limit: Int? = nil, in store: any Store) throws(MsgError) -> [String]? {
        guard isGiven else { return given }
        return try listing(statuses: statuses, limit: given == nil ? limit : nil).narrow(given, in: store)
    }

    /// The listing of messages in `statuses` that match, at most `limit`.
    func listing(statuses: Set<Status>?, limit: Int? = nil) -> Listing {
        Listing(query: Query(statuses: statuses, to: to.flatMap { MessageFilter.isPattern($0) ? nil : $0 }, since: since, until: until, updatedBy: updatedBefore, limit: limit), filter: filter())
    }
}
