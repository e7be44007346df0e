#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// The config file's `[destination PATTERN]` sections that none of a run's messages
/// matched: a typo in a pattern would otherwise send its destinations to the
/// default transport under the default policy without a word. Said once (a watch's
/// first run that claims anything, or a one-shot run), one line naming the sections
/// that also match no destination the store knows (a stored state or a waiting
/// message), so a section whose destination simply had nothing to send is not
/// taken for a typo.
final class UnmatchedSections {
    private var left: [DestinationSection]
    private var said = false
    private var claimed = false

    init(_ sections: [DestinationSection]) {
        left = sections.filter { $0.line > 0 }
    }

    /// The recipients of a claim's messages.
    func saw(_ taken: [Claimer.Claimed]) {
        guard !said, !taken.isEmpty else { return }
        claimed = true
        guard !left.isEmpty else { return }
        for item in taken {
            let to = item.record.to
            left.removeAll { fnmatch($0.pattern, to, 0) == 0 }
            if left.isEmpty { return }
        }
    }

    /// The line to say after a run, once, when it claimed something and a section
    /// matched none of it nor any destination `store` knows; nil otherwise.
    func line(_ store: any Store) -> String? {
        guard !said, claimed else { return nil }
        said = true
        guard !left.isEmpty else { return nil }
        let known = ((try? Destinations(store: store).list()) ?? []).map(\.key)
        let unused = left.filter { s in !known.contains { fnmatch(s.pattern, $0, 0) == 0 } }
        guard !unused.isEmpty else { return nil }
        let names = unused.map(\.origin).joined(separator: ", ")
        return "warning: \(names) matched no message of this run and no destination in the store: is the pattern misspelt? (msg config check; msg route DEST shows where one goes)"
    }
}
