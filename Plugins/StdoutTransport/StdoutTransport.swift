#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// The `stdout:` transport: a mock that "delivers" each record by writing it as one
/// NDJSON line to standard output, as a destination receives it
/// (``Message/writeDelivered(to:)``). For tests, demos and dry runs.
///
/// Delivering an id twice in one process writes it once (ids are the idempotency
/// key); ``lookup(_:)`` answers from what this process delivered.
/// `stdout:?fd=3` writes to file descriptor 3 instead (`3>delivered.ndjson`).
/// Other parameters inject failures for tests and demos (see ``FaultPlan``):
/// `stdout:?fail_first=2`, `stdout:?fail=0.2&seed=7&error=timeout`.
public final class StdoutTransport: Transport {
    private let writer: NDJSONWriter
    private let faults: FaultPlan
    private var delivered: Set<String> = []
    private let traceFD: Int32

    /// Makes the transport; `stdout:` takes no path.
    /// - Throws: `config` when the URL has a path.
    public init(url: PluginURL) throws(MsgError) {
        guard url.path.isEmpty, url.authority == nil || url.authority == "" else {
            throw MsgError(.config, "the stdout: transport takes no path, got '\(url.text)'")
        }
        var fd: Int32 = 1
        if let text = url.parameter("fd") {
            guard let n = Int32(text), n >= 0 else { throw MsgError(.config, "stdout: parameter fd must be a file descriptor number, got '\(text)'") }
            fd = n
        }
        writer = NDJSONWriter(output: ByteOutput(fd: fd, name: fd == 1 ? "standard output" : "file descriptor \(fd)"), flushEveryLine: false)
        faults = try FaultPlan(url)
        if let trace = faults.trace {
            traceFD = open(trace, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
            guard traceFD >= 0 else { throw SystemCalls.error(.config, "stdout: cannot open the trace file \(trace)") }
        } else {
            traceFD = -1
        }
    }

    deinit { if traceFD >= 0 { close(traceFD) } }

    /// Appends one line to the trace, in one `write`, with the time in milliseconds.
    /// The line is made only when there is a trace.
    private func trace(_ line: @autoclosure () -> String) {
        guard traceFD >= 0 else { return }
        var bytes = Array("\(Timestamp.now().milliseconds) \(line())".utf8)
        bytes.append(0x0A)
        _ = bytes.withUnsafeBytes { write(traceFD, $0.baseAddress, $0.count) }
    }

    public func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> [DeliveryOutcome] {
        var outcomes = records.map { record -> DeliveryOutcome in
            // Its fields read where the record is kept, not from a copy of it.
            let id = record.id
            if delivered.contains(id) { return .delivered(confirmed: false) }
            trace("start \(record.to) \(id)")
            if let failure = record.reading({ faults.outcome(for: $0, deadline: deadline) }) {
                trace("end \(record.to) \(id) failed")
                return failure
            }
            trace("end \(record.to) \(id) sent")
            delivered.insert(id)
            do throws(MsgError) {
                try writer.writeDelivered(record)
                return .delivered(confirmed: false)
            } catch {
                delivered.remove(id)
                return .failed(MsgError(.unreachable, "cannot write to standard output: \(error.message)"), retryAfter: nil)
            }
        }
        // One write for the batch: "delivered" means written out, so write before reporting.
        do throws(MsgError) {
            try writer.finish()
        } catch {
            for (i, outcome) in outcomes.enumerated() where outcome == .delivered(confirmed: false) {
                delivered.remove(records[i].id)
                outcomes[i] = .failed(MsgError(.unreachable, "cannot write to standard output: \(error.message)"), retryAfter: nil)
            }
        }
        return outcomes
    }

    public func lookup(_ id: String) throws(MsgError) -> Bool? { delivered.contains(id) }
}

/// Registers the `stdout:` scheme.
@_cdecl("msg_plugin_register")
public func msgPluginRegister(_ abi: UInt32, _ registrar: UnsafeMutableRawPointer) -> Int32 {
    PluginRegistrar.register(abiVersion: abi, registrar: registrar, plugin: "StdoutTransport", version: MsgVersion.current) { r in
        r.transport(scheme: "stdout") { url throws(MsgError) in try StdoutTransport(url: url) }
    }
}
