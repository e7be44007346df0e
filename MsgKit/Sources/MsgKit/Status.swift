/// Where a message is in its life (docs/DESIGN.md 3).
///
/// `queued` → `sending` → `sent` → `delivered` → `read`, with `failed`, `dead` and
/// `held` beside them. Changes go forward by ``rank``; the exceptions are listed
/// in ``canChange(to:)``.
public enum Status: String, Sendable, CaseIterable, Hashable, Comparable {
    case queued, held, sending, failed, sent, delivered, read, dead

    /// How far along the message is: queued/held 0, sending/failed 1, sent 2,
    /// delivered 3, read 4. `dead` has no rank: it is beside the chain.
    public var rank: Int? {
        switch self {
        case .queued, .held: return 0
        case .sending, .failed: return 1
        case .sent: return 2
        case .delivered: return 3
        case .read: return 4
        case .dead: return nil
        }
    }

    /// Whether a message in this status may change to `next`.
    ///
    /// The rules, each with its reason:
    /// 1. Forward by rank along the delivery chain (a receipt may skip steps:
    ///    `sent` → `read`). Backward changes would resend or unsend a message.
    /// 2. `sending` → `failed` or `dead`: the outcome of a failed attempt.
    ///    (The first plan left this implicit; an attempt must be able to fail.)
    /// 3. `failed` → `sending` (retry) and `failed` → `dead` (attempts used up).
    /// 4. `sending` → `queued`: `recover` after a crash before delivery.
    /// 5. `queued` ↔ `held` and `failed` ↔ `held` (release gives a message back
    ///    as it was held). A held message goes nowhere else, so it is never sent
    ///    or retried until released.
    /// 6. `dead` → `queued` only: the explicit redrive (`retry --dead`).
    /// 7. A status never "changes" to itself: that is not a transition.
    /// 8. `queued` → `dead`: a message past its `expires_at` is never attempted.
    public func canChange(to next: Status) -> Bool {
        switch (self, next) {
        case (.held, .queued), (.queued, .held), (.held, .failed), (.failed, .held): return true
        case (.held, _), (_, .held): return false
        case (.sending, .queued): return true
        case (.dead, .queued): return true
        case (.dead, _): return false
        case (.sending, .failed), (.sending, .dead), (.failed, .sending), (.failed, .dead), (.queued, .dead): return true
        case (_, .dead): return false
        case (.queued, .failed): return false
        default:
            guard let from = rank, let to = next.rank else { return false }
            return to > from
        }
    }

    /// Refuses a change that the rules do not allow.
    /// - Throws: `MsgError.invalidTransition`, naming both statuses.
    public func checkChange(to next: Status, id: String) throws(MsgError) {
        guard canChange(to: next) else {
            throw MsgError(.invalidTransition, "message \(id) is \(rawValue) and cannot become \(next.rawValue)")
        }
    }

    public static func < (a: Status, b: Status) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }

    /// Parses a status name. - Throws: `MsgError.badInput` listing the valid names.
    public init(parsing text: String) throws(MsgError) {
        guard let status = Status(rawValue: text) else {
            throw MsgError(.badInput, "unknown status '\(text)'; expected one of \(Status.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self = status
    }

    /// Parses a comma-separated list of statuses (`failed,dead`).
    /// - Throws: `MsgError.badInput` for an unknown name.
    public static func parseList(_ text: String) throws(MsgError) -> Set<Status> {
        var result: Set<Status> = []
        for part in text.split(separator: ",", omittingEmptySubsequences: true) {
            result.insert(try Status(parsing: String(part).trimmingSpaces()))
        }
        return result
    }
}

extension String {
    /// The string without leading and trailing spaces and tabs.
    public func trimmingSpaces() -> String {
        // Scalars, not Characters: "\r\n" is one Character, equal to neither.
        var s = Substring(self).unicodeScalars
        while let c = s.first, c == " " || c == "\t" || c == "\r" || c == "\n" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" || c == "\r" || c == "\n" { s.removeLast() }
        return String(s)
    }
}
