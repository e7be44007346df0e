import ArgumentParser
import MsgEngine
import MsgKit

/// `msg destinations`: each destination's breaker, pause, throttle and last error,
/// with its waiting messages.
struct DestinationsCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "destinations",
        abstract: "List destinations: breaker state, next probe, pause, tokens, waiting messages, last error."
    )
    @OptionGroup var global: GlobalOptions
    @Option(help: "ndjson, json or table (default: table on a terminal, else ndjson).") var format: OutputFormat?
    @Option(help: ArgumentHelp("What makes a destination: to or header:NAME, as flush --key.", valueName: "key"),
            transform: ArgumentValue.destinationKey)
    var key = DestinationKey.recipient

    func validate() throws {
        if format == .csv { throw ValidationError("--format is ndjson, json or table") }
    }

    func run(_ session: Session) throws {
        let now = Timestamp.now()
        let entries = try Destinations(store: try session.store(.read), key: key).list()
        let out = session.console.buffer()
        switch format ?? session.console.format {
        case .table:
            let rows = entries.map { e -> [String] in
                let v = Destinations.json(e, now: now)
                let error = v["last_error"].map { "\($0["code"]?.stringValue ?? ""): \($0["message"]?.stringValue ?? "")" } ?? ""
                return [e.key, v["breaker"]?.stringValue ?? "", v["next_probe"]?.stringValue ?? v["paused_until"]?.stringValue ?? "",
                        v["throttle"]?.stringValue ?? "", String(e.queued), String(e.failed), String(e.sending), error]
            }
            let header = ["DESTINATION", "BREAKER", "UNTIL", "THROTTLE", "QUEUED", "FAILED", "SENDING", "LAST ERROR"]
            out.write(TextTable.render(header: header, rows: rows))
        default:
            out.writeJSON(entries.map { Destinations.json($0, now: now) }, asArray: format == .json)
        }
        try out.flush()
    }
}
