#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import ArgumentParser
import MsgEngine
import MsgKit

/// `--events FILE` and `--on-event CMD`: where `flush`, `retry`, `recover` and
/// `destinations suspend`/`resume` tell the state changes worth telling, one NDJSON
/// event each (docs/DESIGN.md 6, Events).
struct EventOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Append one JSON line per event (a message dead, a breaker opened or closed, …) to this file.", valueName: "file"))
    var events: String?
    @Option(name: .customLong("on-event"), help: ArgumentHelp("Run this command per event, the event on its stdin (no shell; as exec:); never blocks delivery, a failure is reported, not retried.", valueName: "command"))
    var onEvent: String?

    /// The sink, or nil when neither is given. - Throws: `config`.
    func sink(_ session: Session) throws -> EventSink? {
        guard events != nil || onEvent != nil else { return nil }
        var environment: [String] = []
        var p = environ
        while let entry = p.pointee {
            environment.append(String(cString: entry))
            p += 1
        }
        return try EventSink(file: events, command: onEvent, environment: environment, reporter: session.reporter,
                             errorFD: session.console.error)
    }
}
