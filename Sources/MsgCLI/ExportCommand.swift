import ArgumentParser
import MsgEngine
import MsgKit

/// `msg export`: messages with their full history, for audit.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write messages (default: failed and dead) with full history as ndjson, json or csv.",
        discussion: "--out FILE writes FILE atomically and FILE.sha256, which `sha256sum -c FILE.sha256` checks."
    )

    @OptionGroup var global: GlobalOptions
    @Option(help: ArgumentHelp("Statuses, comma-separated.", valueName: "list")) var status = "failed,dead"
    @Option(help: "Only messages created since this time (RFC 3339 or an age such as 7d).") var since: String?
    @Option(help: "Only messages created before this time.") var until: String?
    @Option(help: "ndjson, json or csv.") var format: OutputFormat = .ndjson
    @Option(help: "Write to this file (atomically) and FILE.sha256.") var out: String?
    @Option(help: "Leave a field out: body.") var redact: String?

    func validate() throws {
        if format == .table { throw ValidationError("--format must be ndjson, json or csv") }
        if let redact, redact != "body" { throw ValidationError("--redact takes 'body'") }
        do { _ = try query() } catch { throw ValidationError(error.message) }
    }

    func query() throws(MsgError) -> Query {
        Query(statuses: try Status.parseList(status), since: try since.map { (s) throws(MsgError) in try TimeArgument.parse(s) },
              until: try until.map { (s) throws(MsgError) in try TimeArgument.parse(s) })
    }

    func run() throws {
        var options = Exporter.Options()
        options.query = try query()
        options.format = format
        options.out = out
        options.redactBody = redact == "body"
        let n = try Exporter(store: try global.session().store(.read), options: options).run()
        if let out { Diagnostics.say("exported \(n) message\(n == 1 ? "" : "s") to \(out) (manifest \(out).sha256)") }
    }
}
