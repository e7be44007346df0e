import MsgKit
import MsgSupport
import Synchronization

/// What ``Drafts`` does with a field msg does not know: keeps it (records and an
/// inbox's rows), says so once per field and keeps it (`compose`), or refuses the
/// draft (`compose --strict`).
public enum UnknownFields: Sendable {
    case keep
    case warn(UnknownFieldNotes)
    case refuse
}

/// Says once per field name that a draft carried a field msg does not know.
public final class UnknownFieldNotes: Sendable {
    private let said = Mutex(Set<String>())
    private let reporter: Reporter

    public init(reporter: Reporter) { self.reporter = reporter }

    /// Notes `key`; the first time, says what it is and what it was probably meant to be.
    func note(_ key: String) {
        let first = said.withLock { $0.insert(key).inserted }
        if first { reporter.say("\(DraftFields.unknown(key)): kept in the record as it is, not sent as a header; --strict refuses such a draft") }
    }
}
