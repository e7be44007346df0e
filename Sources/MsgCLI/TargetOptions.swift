import ArgumentParser
import MsgEngine
import MsgKit

/// The messages a command acts on (docs/DESIGN.md 5, one rule for every command
/// that takes ids): ids as arguments (whole, or a unique part: ``ShortID``), else
/// the ids on standard input when it is a pipe, a socket or a file (records,
/// `{"id":…}` objects or bare ids, one per line). Such an input that names none
/// means none: the command does nothing, says "0 messages" and exits 0. Only a
/// terminal, /dev/null or a closed input leaves the choice to the command's filter.
struct TargetOptions: ParsableArguments {
    @Argument(help: "Message ids (or a unique part of one: its first or last characters); without them, the ids on stdin when it is a pipe or a file.",
              completion: Completion.ids)
    var ids: [String] = []

    func validate() throws {
        for id in ids where !UUIDText.isCanonical(id) && !ShortID.isCandidate(id) {
            throw ValidationError("'\(id)' is not a message id (a lower-case UUID, or at least \(ShortID.minimumInput) of its first or last characters)")
        }
    }

    /// Whether the ids come from the arguments or standard input (not the filter).
    var areGiven: Bool { !ids.isEmpty || Invocation.current.inputBringsIDs }

    /// The ids given, nil when none were given (the input is a terminal, /dev/null
    /// or closed), and the number of bad stdin lines. An empty list means the
    /// input named none. `required`: ids must be given (for commands that never act
    /// on all). `use` is how the command opens the store (asked only for a part of an id).
    /// - Throws: `usage` when required and not given; `notFound` or `usage` for a
    ///   part of an id that names none or several; `badInput` for an unreadable input.
    func resolve(_ session: Session, _ use: Session.StoreUse, required: Bool = false) throws(MsgError) -> (ids: [String]?, badLines: Int) {
        if !ids.isEmpty {
            guard ids.allSatisfy(UUIDText.isCanonical) else { return (try ShortID.resolve(ids, in: session.store(use)), 0) }
            return (ids, 0)
        }
        let invocation = Invocation.current
        guard invocation.inputBringsIDs else {
            if required { throw MsgError(.usage, "name the messages: give ids, or pipe records or ids on stdin") }
            return (nil, 0)
        }
        var reader = NDJSONReader(fd: invocation.input)
        let targets = try TargetReader.read(&reader, reporter: invocation.reporter)
        return (targets.ids, targets.badLines)
    }
}

/// Ends a command whose input named no message: "0 messages" on stderr, exit 0
/// (65 when it had bad lines). - Returns: false when there are ids to act on.
func nothingGiven(_ ids: [String]?, badLines: Int, _ session: Session) throws -> Bool {
    guard let ids, ids.isEmpty else { return false }
    // One line that says the fix: cron starts a job with standard input an empty
    // pipe, and cron mails this line to the user.
    session.reporter.say(badLines > 0 ? "0 messages: standard input named none"
        : "0 messages: standard input is an empty pipe or file, which names none (as cron gives a job); to act on every message the command takes, run it with </dev/null")
    try finish(badLines > 0 ? 65 : 0)
    return true
}
