import ArgumentParser
import MsgEngine
import MsgKit

/// `msg recover`: resolves messages a crash left in `sending`. For cron.
struct RecoverCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "recover",
        abstract: "Resolve messages left sending by a crash: sent if the transport has them, else queued again.",
        discussion: "Safe at any time, repeatedly, and while flush runs: a message whose sender is alive is left alone. Silent when there is nothing to do."
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var targets: TargetOptions
    @OptionGroup var eventOptions: EventOptions
    @Option(name: .customLong("stale-after"), help: "Only messages sending for longer than this (default: 5s).", transform: ArgumentValue.duration)
    var staleAfter = MsgDuration.seconds(5)
    @Flag(name: .customLong("dry-run"), help: "Say what would be done; change nothing.") var dryRun = false
    @Flag(name: [.customShort("v"), .customLong("verbose")], help: "Also say how many sending messages were left alone, and why (the default at a terminal; cron mails only recoveries).")
    var verbose = false

    func run(_ session: Session) throws {
        let (ids, badLines) = try targets.resolve(session, .send)
        if try nothingGiven(ids, badLines: badLines, session) { return }
        // On a terminal, the progress line and the summary instead of the records.
        let console = session.console.forRecordsOfARun
        let writer = console.writer()
        let progress = console.progress(dryRun ? "looked at" : "recovered")
        var done = 0
        let recoverer = Recoverer(store: try session.store(.send), transport: try session.transport(), staleAfter: staleAfter)
        writer.flushEveryLine = false
        let events = dryRun ? nil : try eventOptions.sink(session)
        defer { events?.close() }
        let now = Timestamp.now()
        let summary = try recoverer.run(dryRun: dryRun, targets: ids) { (r) throws(MsgError) in
            events?.emit(DeliveryEvent(.recovered, at: now, destination: r.message.to, id: r.message.id, status: r.message.status,
                                       attempts: r.message.attempts))
            try writer.writeWithoutHistory(r)
            done += 1
            progress.update(done)
        }
        progress.finish()
        try writer.finish()
        if summary.total > 0 {
            let verb = dryRun ? "would recover" : "recovered"
            let unchecked = summary.unchecked == 0 ? ""
                : " (\(summary.unchecked) the transport cannot check: they go again and may arrive twice, with their same id)"
            session.console.say("\(verb) \(summary.total) message\(summary.total == 1 ? "" : "s"): \(summary.markedSent) already delivered (sent), \(summary.requeued) queued again\(unchecked)")
        }
        if summary.young + summary.alive > 0 && (verbose || session.console.errorIsTerminal) {
            var why: [String] = []
            if summary.young > 0 { why.append("\(summary.young) sending for less than --stale-after (\(staleAfter))") }
            if summary.alive > 0 { why.append("\(summary.alive) whose sender is still running") }
            session.console.say("left \(summary.young + summary.alive) sending message\(summary.young + summary.alive == 1 ? "" : "s") alone: \(why.joined(separator: ", "))")
        }
        try finish(badLines > 0 ? 65 : 0)
    }
}
