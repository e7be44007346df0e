#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// Recording what happened: outcomes in one commit per slice, and the records printed.
extension Flusher {
    /// Records the outcomes of one slice in one commit, learns from them about their
    /// destinations, and prints the records. When standard output fails (closed:
    /// EPIPE, as SIGPIPE is ignored while flushing; or any other error, kept to be
    /// thrown at the end), prints no more and tells `stop`: the outcomes are recorded
    /// all the same and nothing is left `sending`.
    func record(_ o: Dispatcher.Outcomes, _ claimer: Claimer, _ dispatcher: Dispatcher, into summary: inout Summary) throws(MsgError) {
        // Compare-and-set: written again after an outage (``OutageRidingStore``), an
        // outcome is never recorded twice.
        let applied = try store.update(o.changes)
        faults.pass(.afterSent, count: o.changes.count)
        writer.flushEveryLine = false
        let now = clock()
        for (i, (change, ok)) in zip(o.changes, applied).enumerated() {
            let item = o.items[i]
            // Put back as it was (not attempted): due again, behind the scan.
            if ok && o.outcomes[i] == nil && change.record.message.status != .dead { claimer.scan.putBehind(item.key) }
            claimer.forget(item.record.message.id, key: item.key)
            guard ok else { continue }
            guard let outcome = o.outcomes[i] else {
                if change.record.message.status == .dead {
                    summary.dead += 1  // expired before its turn
                    summary.lastFailure = change.record.message.lastError
                    events?.emit(.dead(change.record.message, destination: item.key, at: now))
                    tell(change.record.message, destination: item.key, now: now)
                    writeOut { () throws(MsgError) in try writer.writeRaw(change.record.jsonWithoutHistory) }
                } else {
                    summary.released += 1  // put back as it was: nothing to print
                }
                continue
            }
            claimer.learn(outcome, of: item, now: now)
            if case .failed = outcome {
                dispatcher.setCautious(item.key, true)
            } else if !o.failedKeys.contains(item.key) {
                dispatcher.setCautious(item.key, false)
            }
            switch change.record.message.status {
            case .sent, .delivered: summary.sent += 1
            case .dead:
                summary.dead += 1
                summary.lastFailure = change.record.message.lastError
                events?.emit(.dead(change.record.message, destination: item.key, at: now))
            default:
                summary.deferred += 1
                summary.lastFailure = change.record.message.lastError
            }
            tell(change.record.message, destination: item.key, now: now)
            // The record as just stored, without history, from the same encoding.
            writeOut { () throws(MsgError) in try writer.writeRaw(change.record.jsonWithoutHistory) }
        }
        writeOut { () throws(MsgError) in try writer.finish() }
    }

    /// Prints and counts the messages a claim found expired (stored dead by the claim).
    func record(expired records: [EncodedMessage], into summary: inout Summary) {
        guard !records.isEmpty else { return }
        writer.flushEveryLine = false
        let now = clock()
        for r in records {
            summary.dead += 1
            summary.lastFailure = r.message.lastError
            events?.emit(.dead(r.message, destination: options.rules.key.of(r.message), at: now))
            tell(r.message, destination: options.rules.key.of(r.message), now: now)
            writeOut { () throws(MsgError) in try writer.writeRaw(r.jsonWithoutHistory) }
        }
        writeOut { () throws(MsgError) in try writer.finish() }
    }

    /// Says on stderr what the outcome log has to say of `m`'s outcome, if anything.
    func tell(_ m: Message, destination: String, now: Timestamp) {
        if outcomeLog != nil, let line = outcomeLog?.outcome(m, destination: destination, now: now) { reporter.say(line) }
    }

    /// Runs a write to standard output unless it has failed before.
    func writeOut(_ write: () throws(MsgError) -> Void) {
        guard !stop.outputIsClosed && outputError == nil else { return }
        do throws(MsgError) {
            try write()
        } catch {
            if (error.underlying as? Errno)?.rawValue != EPIPE { outputError = error }
            stop.outputClosed()
        }
    }
}
