import ArgumentParser
import MsgEngine
import MsgKit
import MsgSupport

/// `msg listen URL --into URL`: the receiving side of `tcp://`.
struct ListenCommand: SessionCommand {
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
    @Argument(help: ArgumentHelp("Where to listen: tcp://HOST:PORT, with ?token_file=FILE (or ?token=SECRET) to require a token (default: $MSG_LISTEN, or listen in the config file, which keep a token out of argv).", valueName: "url"))
    var url: String?
    @Option(help: "The local transport records go into (default: file:$MSG_HOME/inbox).", completion: .list(Completion.transportSchemes)) var into: String?
    @Option(name: .customLong("max-line"), help: "The longest record accepted, in bytes or with KiB/MiB (default 1040KiB: the largest record msg sends).",
            transform: ArgumentValue.size)
    var maxLine = 1040 * 1024
    @Option(help: "The deadline of each delivery into the inbox (default: 3s).", transform: ArgumentValue.duration) var deadline = MsgDuration.seconds(3)
    @Flag(name: .customLong("no-token"), help: "Allow a listener other hosts can reach to take records without a token.") var noToken = false
    @Option(help: ArgumentHelp("Serve the listener's metrics (connections, records received) at http://ADDR/metrics; loopback unless another address is given.", valueName: "host:port"),
            transform: ArgumentValue.metricsAddress)
    var metrics: MetricsAddress?

    func run(_ session: Session) throws {
        guard let url = url ?? session.settings.listen else {
            throw MsgError(.usage, "say where to listen: msg listen tcp://HOST:PORT, MSG_LISTEN, or listen in the config file")
        }
        // The default inbox lives in msg's own home, which msg makes.
        if into == nil { try SystemCalls.makeDirectories(session.settings.home, code: .unavailable) }
        var service = ListenService(url: url, into: into ?? "file:\(session.settings.home)/inbox",
                                    maxLineBytes: maxLine, deadline: deadline, openWithoutToken: noToken,
                                    reporter: session.reporter)
        service.metrics = metrics
        try service.run(loader: session.loader)
    }
}
