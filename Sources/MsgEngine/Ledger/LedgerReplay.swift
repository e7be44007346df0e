import MsgKit
import MsgSupport

/// The replay of one message against the leaves it stands on, the one place that
/// does it: `msg ledger verify` over the store (``LedgerAudit``) and over an export
/// and its proof (``LedgerExportProof``).
///
/// The leaves: the message's last `state` (its content and first `n` history
/// entries) and the entries appended after it, in order. Their hashes, computed
/// again from the record as it is, must be the leaves'; then msg's own rules must
/// hold over what the replay proved (msg-ledger(1) CHECKS):
/// - a `state` is written again only where msg writes one: its history went back
///   (a claim put back) or its content changed, which msg does only before the
///   message was delivered (`queue edit` takes queued, held or failed messages);
/// - the record's status is its last history entry's, and its attempts the count
///   its history implies (``impliedAttempts(_:)``), for neither is in a leaf.
public enum LedgerReplay {
    /// One leaf as a message's list or a proof names it.
    public struct Leaf: Sendable {
        public var at: Int
        public var kind: LedgerLeaf.Kind
        public var n: Int
        public var hash: Digest

        public init(at: Int, kind: LedgerLeaf.Kind, n: Int, hash: Digest) {
            self.at = at
            self.kind = kind
            self.n = n
            self.hash = hash
        }
    }

    /// What `record` (message `m`) shows against `state` and `appended`; `before`:
    /// the history entries the ledger held of it before that state, nil when the
    /// state is its first leaf or it is not known (an export's proof).
    /// - Returns: the findings, the first error first; none when it holds.
    public static func replay(_ record: EncodedMessage, _ m: Message, state: Leaf, appended: [Leaf], before: Int?) throws(MsgError) -> [LedgerFinding] {
        let id = m.id
        let last = appended.last?.at ?? state.at
        if m.isDamaged {
            return [LedgerFinding(.recordDamaged, leaf: state.at, message: id,
                                  "message \(id) no longer reads as a record (damaged): the ledger has it at leaf \(last)")]
        }
        let count = state.n + appended.count
        guard m.history.count >= state.n else {
            return [LedgerFinding(.entryRemoved, leaf: state.at, message: id,
                                  "message \(id) has \(m.history.count) history entries and the ledger \(count) (leaf \(last)): an entry was removed")]
        }
        if try LedgerLeaf.stateHash(record, m, entries: state.n) != state.hash {
            return [LedgerFinding(.contentChanged, leaf: state.at, message: id,
                                  "message \(id): its content (to, from, body, headers, times) or one of its first \(state.n) history entries "
                                      + "is not what the ledger holds (leaf \(state.at))")]
        }
        for entry in appended {
            guard entry.n < m.history.count else { break }
            if try LedgerLeaf.entryHash(id, entry.n, m.history[entry.n]) != entry.hash {
                return [LedgerFinding(.entryChanged, leaf: entry.at, message: id,
                                      "message \(id): history entry \(entry.n) (\(m.history[entry.n].event)) is not what the ledger holds (leaf \(entry.at))")]
            }
        }
        if m.history.count != count {
            let added = m.history.count > count
            return [LedgerFinding(added ? .entryAdded : .entryRemoved, leaf: last, message: id,
                                  "message \(id) has \(m.history.count) history entries and the ledger \(count) (leaf \(last)): "
                                      + (added ? "an entry was added outside msg" : "an entry was removed"))]
        }
        return rules(m, state: state, before: before)
    }

    /// msg's rules over a message whose record is what its leaves hold.
    public static func rules(_ m: Message, state: Leaf, before: Int?) -> [LedgerFinding] {
        var found: [LedgerFinding] = []
        if let before, state.n >= before, let delivered = m.history.prefix(state.n).firstIndex(where: { $0.status.isDelivery }) {
            found.append(LedgerFinding(.stateAfterDelivery, leaf: state.at, message: m.id,
                                       "message \(m.id): leaf \(state.at) writes its whole state again after it was \(m.history[delivered].status.rawValue) "
                                           + "(history entry \(delivered)); msg never changes a delivered message's content: it was rewritten outside msg"))
        }
        if let last = m.history.last, last.status != m.status {
            found.append(LedgerFinding(.statusNotHistory, leaf: state.at, message: m.id,
                                       "message \(m.id) is \(m.status.rawValue), but its history ends \(last.status.rawValue) (\(last.event)): "
                                           + "its status was changed outside msg"))
        }
        let implied = impliedAttempts(m.history)
        if !m.history.isEmpty, implied != m.attempts {
            found.append(LedgerFinding(.attemptsNotHistory, severity: .warning, leaf: state.at, message: m.id,
                                       "message \(m.id) counts \(m.attempts) attempt\(m.attempts == 1 ? "" : "s"), its history \(implied)"))
        }
        return found
    }

    /// The attempts a history implies, as the retry policy counts them: an outcome
    /// of a send (sent, delivered, failed, dead, each from `sending`) counts one,
    /// but a failure because the destination could not be reached or asked to
    /// slow down; a dead message sent back to the queue (`redriven`) starts again
    /// from none.
    public static func impliedAttempts(_ history: [Message.Event]) -> Int {
        var attempts = 0
        var previous: Status?
        for e in history {
            if e.event == "redriven" {
                attempts = 0
            } else if previous == .sending {
                switch e.event {
                case "sent", "delivered":
                    attempts += 1
                case "failed", "dead":
                    if e.error?.code != MsgError.Code.unreachable.name && e.error?.code != MsgError.Code.rateLimited.name { attempts += 1 }
                default:
                    break
                }
            }
            previous = e.status
        }
        return attempts
    }
}

extension Status {
    /// Whether a message in this status was delivered (sent on, or further).
    var isDelivery: Bool { self == .sent || self == .delivered || self == .read }
}
