import ArgumentParser
import MsgEngine
import MsgKit

/// `msg compose`: makes new records from flags, or completes drafts read on stdin.
struct ComposeCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "compose",
        abstract: "Make new message records (and store them with --enqueue).",
        discussion: """
        With --body, prints one new record (--body - reads the body from stdin).
        Without it, completes each draft read on stdin, e.g. {"to":"bob","body":"hi"};
        --to, --from and --header then give values drafts lack.
        """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var input: InputOptions

    @Option(help: "The recipient.") var to: String?
    @Option(help: "The body text, or - to read it from stdin.") var body: String?
    @Option(help: "The sender.") var from: String?
    @Option(name: .customLong("header"), help: ArgumentHelp("A header, repeatable.", valueName: "key=value"), transform: ArgumentValue.header)
    var headers: [Headers.Field] = []
    @Option(name: .customLong("not-before"), help: "Not delivered before this time (RFC 3339, or a delay such as 10m).",
            transform: ArgumentValue.futureTime)
    var notBefore: Timestamp?
    @Option(name: .customLong("expires-in"), help: ArgumentHelp("Never attempted after this: a duration such as 1h, or an RFC 3339 time; then dead (expired).", valueName: "duration"),
            transform: ArgumentValue.futureTime)
    var expiresAt: Timestamp?
    @Flag(help: "Also store the records durably, then print them.") var enqueue = false
    @Flag(help: "Refuse a draft with a field msg does not know (without it, each such field is named once and kept).") var strict = false

    func validate() throws {
        if body == nil && Invocation.current.inputIsTerminal {
            throw ValidationError("give --to and --body, or pipe drafts such as {\"to\":\"bob\",\"body\":\"hi\"} on stdin")
        }
        if body != nil && to == nil { throw ValidationError("--body needs --to") }
    }

    func run(_ session: Session) throws {
        let defaults = Drafts.Defaults(to: to, from: from, headers: Headers(headers.map { ($0.key, $0.value) }),
                                       notBefore: notBefore, expiresAt: expiresAt)
        let store = enqueue ? try session.store() : nil
        let console = session.console
        let unknown: UnknownFields = strict ? .refuse : .warn(UnknownFieldNotes(reporter: session.reporter))
        try finish(try Composer(drafts: Drafts(defaults: defaults, unknown: unknown), store: store, onError: input.onError, console: console)
            .run(to: to, body: body, progress: console.progress(enqueue ? "stored" : "composed")))
    }
}
