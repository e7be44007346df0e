import ArgumentParser
import MsgEngine

/// A command that works on msg's queue: it takes the global options (docs/DESIGN.md 5)
/// and runs with the session they open, so no command resolves settings itself.
protocol SessionCommand: ParsableCommand {
    /// `--store`, `--transport`, `--plugin-path`, `--config`.
    var global: GlobalOptions { get }
    /// Runs the command with the session of its global options.
    func run(_ session: Session) throws
}

extension SessionCommand {
    func run() throws {
        try run(try global.session())
    }
}
