import ArgumentParser

/// `msg queue`: the commands that look at and change the stored queue.
struct QueueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Store, list and count queued messages.",
        subcommands: [QueueAddCommand.self, QueueListCommand.self, QueueCountCommand.self]
    )
}
