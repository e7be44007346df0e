import ArgumentParser
import MsgEngine
import MsgKit

/// `msg route DEST…`: where each destination's messages go and under which policy,
/// as a `flush` with the same settings and flags would send them (Postfix's
/// `postmap -q`).
struct RouteCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "route",
        abstract: "Show where a destination's messages go: the transport, the retry policy, deadline, workers, throttle and breaker, and what set each.",
        discussion: """
        Destinations are the arguments, else the lines of stdin: records (their "to"), \
        msg destinations' lines (their "destination") or bare destinations. The flush \
        flags given (--deadline, --max-attempts, --rate…) apply as they would to a run.
        """
    )
    @OptionGroup var global: GlobalOptions
    @OptionGroup var policy: PolicyOptions
    @Option(help: "ndjson, json or table (default: table on a terminal, else ndjson).") var format: OutputFormat?
    @Argument(help: "Destinations: recipients, as a message's \"to\".") var destinations: [String] = []

    func validate() throws {
        if format == .csv { throw ValidationError("--format is ndjson, json or table") }
    }

    func run(_ session: Session) throws {
        let (given, bad) = try destinationsGiven(session)
        let runPolicy = policy.policy(session.settings.retry)
        let options = policy.options(statuses: [.queued], policy: runPolicy, settings: session.settings)
        let flags: [(String, Bool)] = [("max_attempts", policy.maxAttempts != nil), ("backoff_base", policy.backoffBase != nil),
                                       ("backoff_cap", policy.backoffCap != nil), ("give_up_after", policy.giveUpAfter != nil),
                                       ("deadline", policy.deadline != nil), ("concurrency", policy.concurrency != nil),
                                       ("rate", policy.rate != nil), ("burst", policy.burst != nil), ("breaker", policy.breaker != nil),
                                       ("breaker_cooldown", policy.breakerCooldown != nil)]
        let lookup = RouteLookup(settings: session.settings, policy: runPolicy, options: options,
                                 flags: Set(flags.filter(\.1).map(\.0)))
        let answers = given.map(lookup.answer)
        let out = session.console.buffer()
        switch format ?? session.console.format {
        case .table: out.write(answers.map(RouteLookup.text).joined(separator: "\n"))
        default: out.writeJSON(answers.map(RouteLookup.json), asArray: format == .json)
        }
        try out.flush()
        if bad > 0 { try finish(65) }
    }

    /// The arguments, else stdin's lines: a record's `to`, a destination line's
    /// `destination`, or the line itself.
    private func destinationsGiven(_ session: Session) throws -> (found: [String], bad: Int) {
        if !destinations.isEmpty { return (destinations, 0) }
        let invocation = Invocation.current
        guard invocation.inputBringsIDs else {
            throw MsgError(.usage, "name the destinations: give them as arguments, or pipe records or destinations on stdin")
        }
        var reader = NDJSONReader(fd: invocation.input)
        var found: [String] = []
        var bad = 0
        while let batch = try reader.nextBatch() {
            for line in batch {
                guard let text = line.text?.trimmingSpaces(), !text.isEmpty else {
                    if line.text == nil { bad += 1; session.reporter.say("line \(line.number): not UTF-8 text") }
                    continue
                }
                guard text.hasPrefix("{") else {
                    found.append(text)
                    continue
                }
                switch line.json() {
                case .success(let v):
                    if let d = v["to"]?.stringValue ?? v["destination"]?.stringValue {
                        found.append(d)
                    } else {
                        bad += 1
                        session.reporter.say("line \(line.number): a record without \"to\" or \"destination\"")
                    }
                case .failure(let e):
                    bad += 1
                    session.reporter.say("line \(line.number): \(e.message)")
                }
            }
        }
        return (found, bad)
    }
}
