import ArgumentParser
import MsgEngine
import MsgKit

/// `msg listen URL --into URL`: the receiving side of `tcp://`.
struct ListenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Receive records over the network and deliver each durably into a local transport before acking it.",
        discussion: """
            Serves any number of senders at once (msg-tcp(7) is the protocol). An id already delivered is acked \
            without a second delivery. Port 0 picks a free port; the address bound is said on standard error. \
            Stops cleanly on SIGINT or SIGTERM.
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "Where to listen: tcp://HOST:PORT, with ?token=SECRET to require a token.") var url: String
    @Option(help: "The local transport records go into (default: file:$MSG_HOME/inbox).") var into: String?
    @Option(name: .customLong("max-line"), help: "The longest record accepted, in bytes or with KiB/MiB (default 1040KiB: the largest record msg sends).") var maxLine = "1040KiB"
    @Option(help: "The deadline of each delivery into the inbox.") var deadline = "3s"

    func validate() throws {
        do { _ = try ListenService.parseSize(maxLine) } catch { throw ValidationError("--max-line: \(error.message)") }
        do { _ = try MsgDuration(parsing: deadline) } catch { throw ValidationError("--deadline: \(error.message)") }
    }

    func run() throws {
        let session = try global.session()
        let service = ListenService(url: url, into: into ?? "file:\(session.settings.home)/inbox",
                                    maxLineBytes: try ListenService.parseSize(maxLine), deadline: try MsgDuration(parsing: deadline),
                                    reporter: session.reporter)
        try service.run(loader: session.loader)
    }
}
