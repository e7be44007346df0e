import ArgumentParser
import MsgEngine
import MsgKit

/// Runs a bulk change on the targeted messages and prints the changed records.
func runChange(_ session: Session, _ targets: TargetOptions,
               _ body: (QueueOperations, [String]) throws(MsgError) -> QueueOperations.Outcome) throws {
    let (ids, badLines) = try targets.resolve(required: true)
    let outcome = try body(QueueOperations(store: try session.store(), reporter: session.reporter), ids ?? [])
    let writer = session.console.writer()
    for m in outcome.changed { try writer.write(m, includeHistory: false) }
    try finish(badLines > 0 ? 65 : outcome.exitCode)
}

/// `msg queue hold`: keeps queued messages from being sent until released.
struct QueueHoldCommand: SessionCommand {
    static let configuration = CommandConfiguration(commandName: "hold", abstract: "Hold queued messages back (queued -> held).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var targets: TargetOptions
    func run(_ session: Session) throws { try runChange(session, targets) { (q, ids) throws(MsgError) in try q.move(ids, to: .held, event: "held") } }
}

/// `msg queue release`: lets held messages go.
struct QueueReleaseCommand: SessionCommand {
    static let configuration = CommandConfiguration(commandName: "release", abstract: "Let held messages go (held -> queued).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var targets: TargetOptions
    func run(_ session: Session) throws { try runChange(session, targets) { (q, ids) throws(MsgError) in try q.move(ids, to: .queued, event: "released") } }
}

/// `msg queue rm`: deletes messages.
struct QueueRemoveCommand: SessionCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Delete messages (not while they are being sent); print each deleted record.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var targets: TargetOptions
    func run(_ session: Session) throws { try runChange(session, targets) { (q, ids) throws(MsgError) in try q.remove(ids) } }
}

/// `msg queue mark`: applies delivery receipts.
struct QueueMarkCommand: SessionCommand {
    static let configuration = CommandConfiguration(commandName: "mark", abstract: "Apply receipts to sent messages: --status delivered or read (forward only).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var targets: TargetOptions
    @Option(help: "delivered or read.") var status: String

    func validate() throws {
        guard status == "delivered" || status == "read" else { throw ValidationError("--status must be delivered or read") }
    }

    func run(_ session: Session) throws {
        let target: Status = status == "read" ? .read : .delivered
        try runChange(session, targets) { (q, ids) throws(MsgError) in try q.mark(ids, as: target) }
    }
}
