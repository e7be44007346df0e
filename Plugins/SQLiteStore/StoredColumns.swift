import MsgKit

/// The columns of a record's row besides its text, each derived from the record
/// (``SQLiteSchema``): what the indexes and filters read.
enum StoredColumns {
    /// A waiting record's time to wait for (`not_before`, `next_attempt_at`); NULL
    /// when it is due now or not waiting.
    static func dueAt(_ m: Message) -> Int64? {
        switch m.status {
        case .queued, .failed, .held: m.dueAt?.milliseconds
        default: nil
        }
    }

    /// A record in flight: its lease end, 0 when it has no lease; NULL otherwise.
    static func leaseUntil(_ m: Message) -> Int64? {
        m.status == .sending ? (m.lease?.until.milliseconds ?? 0) : nil
    }

    /// 1 while a flush or retry may take the record or has it (in `messages_open`),
    /// NULL once it was sent, went dead or is held.
    static func open(_ status: Status) -> Int64? { isOpen(status) ? 1 : nil }

    /// Whether records of `status` are in `messages_open`: queued, failed and
    /// sending. Dead and held ones are not (they are in `messages_parked`): a
    /// million left dead by an outage cost a flush nothing (schema 4). `sending`
    /// stays in, so a claim changes no entry of them.
    static func isOpen(_ status: Status) -> Bool {
        switch status {
        case .queued, .failed, .sending: true
        case .sent, .delivered, .read, .dead, .held: false
        }
    }
}
