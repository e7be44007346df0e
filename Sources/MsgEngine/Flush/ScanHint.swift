import MsgKit

/// Where a one-shot run's scan stopped and what it held, left in the store for the
/// next process (``JournalStore/saveScanHint(_:_:)``): `msg flush` from cron during an outage then starts
/// where the last one stopped instead of walking past every message that waits for
/// suspended or broken destinations (150 ms a run with a million of them).
///
/// A hint names the store's mark (``JournalStore/changeFloor(since:)``) as of the scan's last look; the
/// commits after it, the run's own included, are the next run's floor. The next run
/// takes it only before the earliest time one of its holds ends or a message
/// becomes due, and when the floors since its mark are not `all` (no destination
/// state changed): then, as a watch does when another process commits, it goes back
/// to the floor (``ClaimScan/rewind(before:)``), dropping the holds on destinations
/// busy elsewhere, and keeps the holds by state.
enum ScanHint {
    /// The kind of run a hint serves: runs that take the same messages under the
    /// same rules (a run with ids, a rate or a pace leaves none and takes none, nor
    /// one keyed by other than the recipient: its summary counts what its scan read,
    /// where a recipient's are counted by the store).
    static func kind(_ options: Flusher.Options) -> String? {
        guard options.targets == nil, !options.rules.hasRate, options.pace == nil, options.rules.key == .recipient else { return nil }
        let statuses = options.statuses.map(\.rawValue).sorted().joined(separator: ",")
        return "v1 statuses=\(statuses) key=\(options.rules.key) due=\(options.ignoreDue ? 0 : 1) overrides=\(options.rules.overridesWaits ? 1 : 0)"
    }

    /// The hint's text for `scan`, with the store's `mark`.
    static func text(_ scan: ClaimScan, mark: Int64) -> String {
        var w = JSONWriter()
        w.raw("{")
        w.key("mark", first: true); w.int(Int(mark))
        if let p = scan.position {
            w.key("at"); w.raw("[")
            w.int(Int(p.createdAt.milliseconds)); w.raw(","); w.string(p.id)
            w.raw("]")
        }
        w.key("exhausted"); w.raw(scan.exhausted ? "true" : "false")
        if let due = scan.nextDue { w.key("next_due"); w.int(Int(due.milliseconds)) }
        w.key("held"); w.raw("[")
        var first = true
        for (key, hold) in scan.holds.held.sorted(by: { $0.key < $1.key }) {
            guard let (name, until) = name(hold.why) else { continue }
            if !first { w.raw(",") }
            first = false
            w.raw("["); w.string(key); w.raw(","); w.string(name)
            if let until { w.raw(","); w.int(Int(until.milliseconds)) }
            w.raw("]")
        }
        w.raw("]}")
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// The holds a hint keeps: by state, and busy elsewhere (whose end writes at or
    /// before the messages held). A probe of the run's own and a throttle (a run
    /// with a rate leaves no hint) are not kept.
    private static func name(_ hold: DestinationBook.Hold) -> (String, Timestamp?)? {
        switch hold {
        case .suspended(let until): ("suspended", until)
        case .open(let until): ("open", until)
        case .paused(let until): ("paused", until)
        case .busy: ("busy", nil)
        case .probing, .throttled: nil
        }
    }

    private static func hold(_ name: String, _ until: Timestamp?) -> DestinationBook.Hold? {
        switch (name, until) {
        case ("suspended", let t): .suspended(until: t)
        case ("open", let t?): .open(until: t)
        case ("paused", let t?): .paused(until: t)
        case ("busy", nil): .busy
        default: nil
        }
    }

    /// Takes `text` into the fresh `scan` when it still holds at `now`, going back
    /// to the floor of what changed since; false (the scan untouched) when it does
    /// not, or does not read.
    static func adopt(_ text: String, into scan: inout ClaimScan, now: Timestamp, floors: any JournalStore) throws(MsgError) -> Bool {
        guard let value = try? JSONParser.parse(text), let mark = value["mark"]?.intValue,
              case .array(let heldItems)? = value["held"], case .bool(let exhausted)? = value["exhausted"] else { return false }
        var position: ClaimPosition?
        if let at = value["at"] {
            guard case .array(let parts) = at, parts.count == 2, let ms = parts[0].intValue, let id = parts[1].stringValue else { return false }
            position = ClaimPosition(createdAt: Timestamp(milliseconds: Int64(ms)), id: id)
        }
        var held: [(String, DestinationBook.Hold)] = []
        for item in heldItems {
            guard case .array(let parts) = item, parts.count >= 2, let key = parts[0].stringValue, let name = parts[1].stringValue else { return false }
            let until = parts.count > 2 ? parts[2].intValue.map { Timestamp(milliseconds: Int64($0)) } : nil
            if parts.count > 2 && until == nil { return false }
            guard let hold = hold(name, until) else { return false }
            // A hold that has ended by now: the hint is of no use.
            if let until = hold.until, until <= now { return false }
            held.append((key, hold))
        }
        let nextDue = value["next_due"]?.intValue.map { Timestamp(milliseconds: Int64($0)) }
        if let nextDue, nextDue <= now { return false }
        let change = try floors.changeFloor(since: Int64(mark))
        if change.floor == .all { return false }
        scan.resume(at: position, exhausted: exhausted, held: held, nextDue: nextDue)
        if case .from(let floor) = change.floor, !scan.rewind(before: floor) {
            scan.rewind()
            return false
        }
        scan.floorMark = change.mark
        return true
    }
}
