import ArgumentParser
import MsgEngine
import MsgKit

/// Runs a bulk change on the targeted messages and prints the changed records.
func runChange(_ session: Session, _ targets: TargetOptions,
               _ body: (QueueOperations, [String]) throws(MsgError) -> QueueOperations.Outcome) throws {
    let (ids, badLines) = try targets.resolve(session, .write, required: true)
    if try nothingGiven(ids, badLines: badLines, session) { return }
    let outcome = try body(QueueOperations(store: try session.store(), reporter: session.reporter), ids ?? [])
    let writer = session.console.writer()
    for m in outcome.changed { try writer.write(m, includeHistory: false) }
    try finish(badLines > 0 ? 65 : outcome.exitCode)
}

/// How `rm`, `hold` and `release` choose and act: the ids given (arguments, or
/// stdin when it is a pipe or a file), narrowed by the filter; or, with none given,
/// every message the filter matches (as `ls` lists them). A pipe that brings no
/// ids means none, never "all": `msg queue ls --to nobody | msg queue rm --status
/// dead` removes nothing. `--dry-run` prints what would change and how many.
struct ActionOptions: ParsableArguments {
    @OptionGroup var targets: TargetOptions
    @OptionGroup var filters: FilterOptions
    @Flag(name: .customLong("dry-run"), help: "Print the messages that would change and how many; change nothing.") var dryRun = false

    /// Selects, acts (or previews), prints the records and says how many on stderr.
    func run(_ session: Session, verb: String,
             _ body: (QueueOperations, [String]) throws(MsgError) -> QueueOperations.Outcome) throws {
        var given: [String]?
        var badLines = 0
        if targets.areGiven || !filters.isGiven {
            (given, badLines) = try targets.resolve(session, .write, required: true)
        }
        if try nothingGiven(given, badLines: badLines, session) { return }
        let store = try session.store()
        // Ids given keep their order; none the filter leaves out is reported.
        let ids = filters.isGiven ? try filters.listing().narrow(given, in: store) : given
        // What the filter chose and cannot change is counted, not an error: the
        // filter asked for what can change. Ids given are each told.
        let operations = QueueOperations(store: store, reporter: session.reporter, dryRun: dryRun, skipsQuietly: given == nil)
        let outcome = try body(operations, ids ?? [])
        let writer = session.console.writer()
        for m in outcome.changed { try writer.write(m, includeHistory: false) }
        let n = outcome.changed.count
        let skipped = outcome.skipped.values.reduce(0, +)
        let skips = skipped == 0 ? "" : "; \(skipped) skipped that cannot \(verb == "remove" ? "be removed" : "be " + (verb == "hold" ? "held" : verb + "d")) ("
            + outcome.skipped.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key.rawValue)" }.joined(separator: ", ") + ")"
        if dryRun {
            session.reporter.say("dry run: would \(verb) \(n) message\(n == 1 ? "" : "s")\(skips); nothing changed")
        } else if filters.isGiven {
            session.reporter.say("\(verb): \(n) message\(n == 1 ? "" : "s")\(skips)")
        }
        try finish(badLines > 0 ? 65 : outcome.exitCode)
    }
}

/// `msg queue hold`: keeps queued and failed messages from being sent or retried until released.
struct QueueHoldCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "hold", abstract: "Hold queued and failed messages back (-> held): the ids given, or all the filter matches.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var action: ActionOptions
    @Option(help: "Why; kept in each message's history.") var reason: String?
    func run(_ session: Session) throws {
        try action.run(session, verb: "hold") { (q, ids) throws(MsgError) in try q.hold(ids, reason: reason) }
    }
}

/// `msg queue release`: lets held messages go.
struct QueueReleaseCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "release", abstract: "Let held messages go, back to queued or failed as they were held: the ids given, or all the filter matches.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var action: ActionOptions
    @Option(help: "Why; kept in each message's history.") var reason: String?
    func run(_ session: Session) throws {
        try action.run(session, verb: "release") { (q, ids) throws(MsgError) in try q.release(ids, reason: reason) }
    }
}

/// `msg queue rm`: deletes messages.
struct QueueRemoveCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm", abstract: "Delete messages (not while they are being sent): the ids given, or all the filter matches; print each deleted record.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var action: ActionOptions
    func run(_ session: Session) throws { try action.run(session, verb: "remove") { (q, ids) throws(MsgError) in try q.remove(ids) } }
}

/// `msg queue mark`: applies delivery receipts.
struct QueueMarkCommand: SessionCommand {
    static let configuration = CommandConfiguration(commandName: "mark", abstract: "Apply receipts to sent messages: --status delivered or read (forward only).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var targets: TargetOptions
    @Option(help: "delivered or read.", completion: .list(["delivered", "read"]), transform: ArgumentValue.receipt) var status: Status

    func run(_ session: Session) throws {
        let target = status
        try runChange(session, targets) { (q, ids) throws(MsgError) in try q.mark(ids, as: target) }
    }
}
