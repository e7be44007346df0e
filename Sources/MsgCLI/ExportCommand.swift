import ArgumentParser
import MsgEngine
import MsgKit
import MsgSupport

/// `msg export`: messages with their full history, for audit.
struct ExportCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write messages (default: failed and dead) with full history as ndjson, json or csv.",
        discussion: "--out FILE writes FILE atomically and FILE.sha256, which `sha256sum -c FILE.sha256` checks."
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var targets: TargetOptions
    @Option(help: ArgumentHelp("Statuses: comma-separated or repeated, or all (default: failed,dead).", valueName: "list"),
            completion: Completion.statuses, transform: ArgumentValue.statuses)
    var status: [Set<Status>] = []
    @Option(help: "Only messages created since this time (RFC 3339, a date, or an age such as 7d).", transform: ArgumentValue.time)
    var since: Timestamp?
    @Option(help: "Only messages created before this time.", transform: ArgumentValue.time) var until: Timestamp?
    @Option(help: "ndjson, json or csv (default: ndjson).", transform: { text in
        guard let format = OutputFormat(rawValue: text), format != .table else {
            throw ValidationError("an export is ndjson, json or csv")
        }
        return format
    })
    var format: OutputFormat = .ndjson
    @Option(help: "Write to this file (atomically) and FILE.sha256.") var out: String?
    /// A field an export can leave out.
    enum Redaction: String, CaseIterable {
        case body
    }

    @Option(help: "Leave a field out: body.", completion: .list(Redaction.allCases.map(\.rawValue)), transform: ArgumentValue.oneOf(Redaction.self))
    var redact: Redaction?

    @Option(help: ArgumentHelp("With --out: FILE.proof too, each record's inclusion proof in the ledger against a checkpoint signed by this key (msg-ledger(1)).",
                               valueName: "key"))
    var proof: String?

    func validate() throws {
        if proof != nil {
            if out == nil { throw ValidationError("--proof needs --out: the proof is written beside the export") }
            if format != .ndjson { throw ValidationError("--proof needs the ndjson format: the records are proven as msg wrote them") }
            if redact != nil { throw ValidationError("--proof proves whole records: not with --redact") }
        }
    }

    func query() -> Query {
        Query(statuses: status.union ?? [.failed, .dead], since: since, until: until)
    }

    func run(_ session: Session) throws {
        let (ids, badLines) = try targets.resolve(session, .read)
        if try nothingGiven(ids, badLines: badLines, session) { return }
        var options = Exporter.Options()
        options.query = query()
        options.query.ids = ids.map(Set.init)
        options.format = format
        options.out = out
        options.redactBody = redact == .body
        if let proof { options.proofKey = try LedgerKeys.readPrivate(proof) }
        let console = session.console
        let n = try Exporter(store: try session.store(.read), options: options, console: console)
            .run(progress: console.progress("exported", shown: console.errorIsTerminal && (out != nil || !console.outputIsTerminal)))
        if let out {
            let beside = OutputPath.namesAFile(out) ? " (manifest \(out).sha256\(proof == nil ? "" : ", proof \(out).proof"))" : ""
            console.say("exported \(n) message\(n == 1 ? "" : "s") to \(out)\(beside)")
        }
        try finish(badLines > 0 ? 65 : 0)
    }
}
