import ArgumentParser
import MsgEngine
import MsgKit

/// `msg destinations`: lists destinations (the default), suspends and resumes one.
struct DestinationsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "destinations",
        abstract: "List destinations (the default), suspend or resume one.",
        subcommands: [DestinationsListCommand.self, DestinationsSuspendCommand.self, DestinationsResumeCommand.self],
        defaultSubcommand: DestinationsListCommand.self
    )
}

/// `msg destinations [ls]`: each destination's suspension, breaker, pause, throttle
/// and last error, with its waiting messages.
struct DestinationsListCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List destinations: suspension, breaker state, next probe, pause, tokens, waiting messages, last error."
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
        // Which transport each takes (the config file's [destination] sections), when
        // destinations are recipients; shown without credentials or parameters.
        let transport: ((String) -> String)? = key == .recipient ? { Session.shown(session.transportURL(for: $0)) } : nil
        let out = session.console.buffer()
        switch format ?? session.console.format {
        case .table:
            // The transport, and the section (its line) or --route that chose it.
            let routed = { (key: String) -> String in
                let (url, origin) = session.settings.route(for: key)
                let line = origin.firstRange(of: "(line ").map { String(origin[$0.lowerBound...]) }
                let why = line.map { " " + $0 } ?? (origin.hasPrefix("--route") ? " (--route)" : "")
                return Session.shown(url) + why
            }
            out.write(DestinationTable.render(entries, now: now, width: session.console.width,
                                              transport: session.settings.routes.isEmpty || key != .recipient ? nil : routed))
        default:
            out.writeJSON(entries.map { e in
                var json = Destinations.json(e, now: now)
                if let transport, case .object(var members) = json {
                    members.insert(.init("transport", .string(transport(e.key))), at: 1)
                    members.insert(.init("route", .string(session.settings.route(for: e.key).origin)), at: 2)
                    json = .object(members)
                }
                return json
            }, asArray: format == .json)
        }
        try out.flush()
    }
}

/// `msg destinations suspend DEST`: no message of DEST is claimed, by any process on
/// the store, until `resume` or the end of `--for`.
struct DestinationsSuspendCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "suspend",
        abstract: "Suspend a destination: no process on the store sends to it until resumed (or --for ends).",
        discussion: """
        Messages already being sent when it is suspended finish; the rest stay queued, \
        no attempt counted. flush and retry count them as held back (exit 75). \
        msg destinations and msg queue show say so, with the reason.
        """
    )
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The destination, as msg destinations lists it.") var destination: String
    @Option(name: .customLong("for"), help: ArgumentHelp("Resume by itself after this long (2h, 30m).", valueName: "duration"),
            transform: ArgumentValue.duration)
    var duration: MsgDuration?
    @Option(help: "Why; kept with the suspension and shown wherever it is.") var reason: String
    @OptionGroup var eventOptions: EventOptions

    func validate() throws {
        if destination.isEmpty { throw ValidationError("the destination must not be empty") }
        if let duration, duration.milliseconds <= 0 { throw ValidationError("--for must be longer than 0") }
    }

    func run(_ session: Session) throws {
        let now = Timestamp.now()
        let until = duration.map { now.adding($0) }
        let destinations = Destinations(store: try session.store())
        try destinations.refusePattern(destination, command: "suspend")
        let events = try eventOptions.sink(session)
        _ = try destinations.suspend(destination, until: until, reason: reason, now: now)
        if let events {
            events.emit(DeliveryEvent(.suspended, at: now, destination: destination, until: until, reason: reason))
            events.close()
        }
        session.reporter.say("destination \(TextTable.escaped(destination)): suspended " + (until.map { "until \($0)" } ?? "until msg destinations resume"))
    }
}

/// `msg destinations resume DEST`: ends a suspension, a pause and an open breaker.
struct DestinationsResumeCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume", abstract: "Let a destination send again now: end its suspension, the pause it asked for (429) and an open breaker.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var eventOptions: EventOptions
    @Argument(help: "The destination, as msg destinations lists it.") var destination: String

    func run(_ session: Session) throws {
        let destinations = Destinations(store: try session.store())
        try destinations.refusePattern(destination, command: "resume")
        let events = try eventOptions.sink(session)
        let was = try destinations.resume(destination)
        if was.any, let events {
            events.emit(DeliveryEvent(.resumed, at: Timestamp.now(), destination: destination))
            events.close()
        }
        var ended: [String] = []
        if was.suspension { ended.append("suspension ended") }
        if let until = was.pause { ended.append("pause until \(until) cleared") }
        if let failures = was.breaker { ended.append("breaker closed (after \(failures) failures in a row)") }
        session.reporter.say("destination \(TextTable.escaped(destination)): "
            + (ended.isEmpty ? "nothing to resume: it was not suspended, paused or open" : "resumed: " + ended.joined(separator: ", ")))
    }
}
