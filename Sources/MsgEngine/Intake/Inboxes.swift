import MsgKit

/// The inboxes a flush takes in before each run (msg-inbox(1)): those named with
/// `--inbox`, and the store's own (PostgreSQL's `msg.inbox`, which `msg.enqueue()`
/// fills), each drained by one ``InboxIntake`` into the flush's store.
public final class Inboxes {
    private let named: [(name: String, inbox: any DraftInbox)]
    private let intake: InboxIntake?
    private let reporter: Reporter
    /// An inbox that could not be reached, said once until it answers again.
    private var away: Set<String> = []

    /// Opens `urls` and the inbox of the store at `storeURL` (when its plugin keeps
    /// one, which is loaded already), to be taken into a handle of that store of
    /// their own, opened when the first row comes: what they store is then a change
    /// another handle made, which a flush's claim scan sees as another process's.
    /// A refused row's text too large for its record is kept in `refused`.
    /// - Throws: what opening an inbox or the store throws (`config` for a URL that names none).
    public init(_ urls: [String], storeURL: String, loader: PluginLoader, refused: RefusedDrafts, faults: FaultPoints?,
                reporter: Reporter) throws(MsgError) {
        var named: [(String, any DraftInbox)] = []
        if let own = try loader.storesOwnInbox(storeURL) { named.append(("the store's inbox", own)) }
        for url in urls { named.append((url, try loader.openInbox(url))) }
        self.named = named
        self.intake = named.isEmpty ? nil : InboxIntake(opening: { () throws(MsgError) in try loader.openStore(storeURL, access: .write) },
                                                        refused: refused, faults: faults)
        self.reporter = reporter
    }

    /// Whether there is an inbox to take in.
    public var isEmpty: Bool { named.isEmpty }

    /// Takes in every inbox until it is empty, saying what was refused.
    /// - Parameter ridingOut: an unreachable inbox is said once and left for the
    ///   next call (a watch), instead of ending the command.
    /// - Throws: an inbox's or the store's errors.
    @discardableResult
    public func drain(ridingOut: Bool = false) throws(MsgError) -> InboxIntake.Summary {
        var total = InboxIntake.Summary()
        guard let intake else { return total }
        for (name, inbox) in named {
            do throws(MsgError) {
                let s = try intake.drain(inbox)
                if away.remove(name) != nil { reporter.say("inbox \(name) answers again") }
                if s.refused > 0 {
                    reporter.say("inbox \(name): \(s.refused) row\(s.refused == 1 ? " was not a valid draft" : "s were not valid drafts"): stored dead (msg queue ls --status dead)")
                }
                total.add(s)
            } catch where ridingOut && error.code == .unreachable {
                if away.insert(name).inserted { reporter.say("inbox \(name): \(error.message); trying again") }
            }
        }
        return total
    }

    /// Whether any inbox may have rows that came in since the last look.
    /// - Throws: an inbox's errors other than being unreachable (then it may have).
    public func changed() throws(MsgError) -> Bool {
        var any = false
        for (_, inbox) in named {
            do throws(MsgError) {
                if try inbox.changed() { any = true }
            } catch where error.code == .unreachable {
                any = true
            }
        }
        return any
    }
}
