import ArgumentParser
import MsgEngine
import MsgKit

/// `msg inbox`: an application's own table of drafts, taken into the queue (msg-inbox(1)).
struct InboxCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inbox",
        abstract: "Take messages an application wrote in its own transactions (the transactional outbox).",
        discussion: """
            The application inserts drafts into msg_inbox in its own database, in the same transaction as \
            its own rows: a rollback leaves nothing, a commit is taken into the queue exactly once. \
            flush --watch --inbox URL takes them in as they come. See msg-inbox(1).
            """,
        subcommands: [InboxInstallCommand.self, InboxDrainCommand.self]
    )
}

/// `msg inbox install URL`: creates the table where it is missing.
struct InboxInstallCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Create the inbox table in an application's database (sqlite:PATH); nothing else there is touched.",
        discussion: "Safe to run again: an inbox that is there is left as it is. PostgreSQL's inbox (msg.enqueue) comes with the store's schema."
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp("The application's database: sqlite:PATH, or postgres://… for msg's schema there.", valueName: "url"))
    var url: String

    func run(_ session: Session) throws {
        session.reporter.say(try session.loader.openInbox(url).install())
    }
}

/// `msg inbox drain URL`: takes every row in, once, and prints each record stored.
struct InboxDrainCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "drain",
        abstract: "Take every row of an application's inbox into the queue, once each; print each record.",
        discussion: """
            A row's message keeps the draft's id (its idempotency key) or the id its row fixes, so a row \
            taken again after a crash is not queued twice. A row that is not a valid draft is stored dead \
            with the reason (exit 65). For a service, flush --watch --inbox URL.
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp("The application's database: sqlite:PATH, or postgres://….", valueName: "url"))
    var url: String

    func run(_ session: Session) throws {
        let inbox = try session.loader.openInbox(url)
        let writer = session.console.writer()
        writer.flushEveryLine = false
        let progress = session.console.progress("taken")
        let intake = InboxIntake(opening: { () throws(MsgError) in try session.store(.write) }, refused: session.refusedDrafts,
                                 faults: try FaultPoints())
        let summary = try intake.drain(inbox, progress: { progress.update($0.taken) }) { (record, result) throws(MsgError) in
            if result.inserted { try writer.writeRaw(record.json) } else { try writer.write(result.message) }
        }
        progress.finish()
        try writer.finish()
        if summary.taken > 0 && (session.console.errorIsTerminal || summary.refused > 0) {
            session.console.say("took \(summary.taken) row\(summary.taken == 1 ? "" : "s"): \(summary.stored) queued, \(summary.duplicates) queued already, \(summary.refused) dead (not valid drafts)")
        }
        try finish(summary.refused > 0 ? 65 : 0)
    }
}
