#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import ArgumentParser
import MsgEngine
import MsgKit
import MsgSupport

/// `msg metrics`: the store's metrics in Prometheus text format, once: on standard
/// output, or into `DIR/msg.prom` for node_exporter's textfile collector.
struct MetricsCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "metrics",
        abstract: "Print the queue's metrics in Prometheus text format (for cron, or node_exporter's textfile collector).",
        discussion: """
        Messages by status, messages due and the queue's lag (age of the oldest due \
        message), attempts by outcome and error code, enqueue-to-sent latency, \
        deliveries and failures of the busiest destinations, destinations suspended, \
        paused or with an open breaker. Reads the store; changes nothing.
        """
    )
    @OptionGroup var global: GlobalOptions
    @Option(help: ArgumentHelp("Write DIR/msg.prom (by a temporary file and a rename) instead of printing.", valueName: "dir"))
    var textfile: String?
    @Option(help: "Destinations named in the per-destination series; the rest are summed as (other).", transform: ArgumentValue.count(from: 1, to: 10_000))
    var top = 20
    @Option(help: ArgumentHelp("What makes a destination: to or header:NAME, as flush --key.", valueName: "key"),
            transform: ArgumentValue.destinationKey)
    var key = DestinationKey.recipient

    func run(_ session: Session) throws {
        let text = try Metrics(store: try session.store(.read), key: key, top: top).render()
        guard let textfile else {
            let out = session.console.buffer()
            out.write(text)
            try out.flush()
            return
        }
        var st = stat()
        guard stat(textfile, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else {
            throw MsgError(.config, "--textfile \(textfile): not a directory (node_exporter's --collector.textfile.directory)")
        }
        // node_exporter reads only names ending in .prom: the temporary one does not.
        let file = try OutputFile(textfile + "/msg.prom", option: "--textfile", mode: 0o644, streams: false, code: .storeIO)
        try file.write(Array(text.utf8))
        try file.commit()
    }
}
