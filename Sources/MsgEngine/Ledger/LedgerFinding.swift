import MsgKit

/// One thing a check of the ledger found, as a value (git fsck's messages are the
/// model): a stable ``ID`` a script can match, a ``Severity``, the leaf and the
/// message it is about, and its words; ``line`` renders it, the one place that does.
/// An `error` means the store is not what its ledger holds; a `warning` names what
/// msg would not have written but that proves no change (a count msg keeps beside
/// the history), and does not fail the check.
public struct LedgerFinding: Sendable, Equatable {
    public enum Severity: String, Sendable, Comparable {
        case error, warning
        public static func < (a: Severity, b: Severity) -> Bool { a == .error && b == .warning }
    }

    /// A finding's kind, in words that do not change between versions.
    public struct ID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // The log itself.
        /// A leaf cannot be read, or leaves are missing from the log.
        public static let leafUnreadable = ID(rawValue: "leaf-unreadable")
        /// A leaf in a format this msg does not know (a store built for a newer msg).
        public static let leafFormatUnknown = ID(rawValue: "leaf-format-unknown")
        /// A leaf's hash is not the hash of what it says.
        public static let leafChanged = ID(rawValue: "leaf-changed")
        /// A leaf no message names: its message or change was deleted behind msg's back.
        public static let leafOrphaned = ID(rawValue: "leaf-orphaned")
        /// A checkpoint's size is past the log's end: leaves were removed.
        public static let logShorter = ID(rawValue: "log-shorter-than-checkpoint")
        /// The log's first leaves do not hash to a checkpoint's root.
        public static let logRewritten = ID(rawValue: "log-rewritten-before-checkpoint")
        /// More messages in no ledger than were stored before it began.
        public static let messageUnledgered = ID(rawValue: "message-unledgered")
        // A message's list of leaves.
        /// A message names a leaf past the log's end, one another message names, or
        /// another message's, or the beginning.
        public static let listWrong = ID(rawValue: "leaf-list-wrong")
        /// A history entry appended out of order.
        public static let entryOutOfOrder = ID(rawValue: "entry-out-of-order")
        /// A message in the store the ledger has removed, or a removed one without its removal.
        public static let removalWrong = ID(rawValue: "removal-wrong")
        /// A message with no state in the ledger.
        public static let stateMissing = ID(rawValue: "state-missing")
        // The record against its leaves (the replay).
        /// The record no longer reads (damaged).
        public static let recordDamaged = ID(rawValue: "record-damaged")
        /// Its content or one of its history entries is not what the ledger holds.
        public static let contentChanged = ID(rawValue: "content-changed")
        public static let entryChanged = ID(rawValue: "entry-changed")
        /// History entries added or removed outside msg.
        public static let entryAdded = ID(rawValue: "entry-added")
        public static let entryRemoved = ID(rawValue: "entry-removed")
        // msg's own rules over the replay.
        /// A state written after the message was delivered: msg never changes a
        /// delivered message's content, nor writes its whole state again.
        public static let stateAfterDelivery = ID(rawValue: "state-after-delivery")
        /// The record's status is not its last history entry's.
        public static let statusNotHistory = ID(rawValue: "status-not-history")
        /// The record's attempts are not the count its history implies.
        public static let attemptsNotHistory = ID(rawValue: "attempts-not-history")
        // An export.
        /// A message twice in an export (it would be counted twice).
        public static let exportDuplicate = ID(rawValue: "export-duplicate")
        /// An export and its proof do not go together line by line.
        public static let exportProofMismatch = ID(rawValue: "export-proof-mismatch")
        /// The proof's leaves and subtrees do not hash to its signed checkpoint.
        public static let proofRootWrong = ID(rawValue: "proof-root-wrong")
    }

    public let id: ID
    public let severity: Severity
    /// The leaf it is about (for order), when one.
    public let leaf: Int?
    /// The message it is about, when one.
    public let message: String?
    public let text: String

    public init(_ id: ID, severity: Severity = .error, leaf: Int? = nil, message: String? = nil, _ text: String) {
        self.id = id
        self.severity = severity
        self.leaf = leaf
        self.message = message
        self.text = text
    }

    /// `ledger: error content-changed: message 01…: its content … (leaf 12)`.
    public var line: String { "ledger: \(severity.rawValue) \(id.rawValue): \(text)" }
}
