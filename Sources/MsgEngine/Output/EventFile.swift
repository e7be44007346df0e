#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport
import Synchronization

/// `--events FILE` (``EventSink``): each event's line appended when it is emitted,
/// one short write under a lock. A failed write is reported once, and the run goes on.
final class EventFile: Sendable {
    let path: String
    private let fd: Int32
    private let lock = Mutex<Void>(())
    private let failed = Atomic<Bool>(false)
    private let reporter: Reporter

    /// Opens `path` for appending, created 0600 when missing.
    /// - Throws: `config` when it cannot be opened.
    init(_ path: String, reporter: Reporter) throws(MsgError) {
        self.path = path
        self.reporter = reporter
        fd = try OutputPath.openAppending(path, option: "--events", mode: 0o600, code: .config)
    }

    deinit { Glibc.close(fd) }

    func append(_ line: [UInt8]) {
        lock.withLock { _ in
            do throws(MsgError) {
                try SystemCalls.writeAll(fd, line, code: .storeIO, what: path)
            } catch {
                if !failed.exchange(true, ordering: .relaxed) { reporter.say("events: \(error.message); events are not written there") }
            }
        }
    }
}
