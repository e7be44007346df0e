import ArgumentParser

/// `msg queue`: the commands that look at and change the stored queue.
struct QueueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Store, list, inspect and change queued messages.",
        subcommands: [QueueAddCommand.self, QueueListCommand.self, QueueCountCommand.self, QueueShowCommand.self, QueueEditCommand.self,
                      QueueRemoveCommand.self, QueueHoldCommand.self, QueueReleaseCommand.self, QueueMarkCommand.self,
                      QueueStatsCommand.self, QueuePurgeCommand.self]
    )
}
