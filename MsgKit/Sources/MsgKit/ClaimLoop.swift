/// The claim, written once for every store: reads candidates from a
/// ``ClaimSession`` in FIFO order, chunk by chunk, lets a ``ClaimPlanner``
/// decide, and stores what it took, the damaged records it met and the
/// destination states in the session's one commit.
public enum ClaimLoop {
    /// Runs one claim in `session`. - Throws: what the session or the planner throws
    /// (then the store commits nothing).
    public static func run(_ request: ClaimRequest, _ planner: any ClaimPlanner, in session: any ClaimSession) throws(MsgError) -> ClaimResult {
        try planner.begin(session)
        var taken: [Change] = []
        var damaged: [Change] = []
        var position = request.after
        var reachedEnd = false
        scan: while taken.count < request.limit {
            let want = max(1, min(request.chunk, request.limit - taken.count))
            let rows = try session.candidates(request.query, after: position, skipping: planner.skipping, limit: want)
            let answers = try planner.consider(rows, in: session)
            for (row, answer) in zip(rows, answers) {
                if answer == .stop { break scan }
                position = row.position
                if row.status != .dead && row.record.message.isDamaged {
                    damaged.append(Change(row.record, expected: row.status))
                    continue
                }
                if case .take(let r) = answer {
                    taken.append(Change(r, expected: row.status))
                    if taken.count == request.limit { break scan }
                }
            }
            if rows.count < want {
                reachedEnd = true
                break
            }
        }
        let applied = try session.store(taken + damaged, states: planner.finish())
        return ClaimResult(taken: zip(taken, applied).compactMap { $1 ? $0.record : nil }, position: position, reachedEnd: reachedEnd)
    }
}

/// A planner that takes every candidate `transform` changes (``Store/claim(_:limit:_:)``):
/// for recover, redrive and receipts, which need no destinations.
final class TransformPlanner: ClaimPlanner {
    private let transform: (Message) throws(MsgError) -> Message?

    init(_ transform: @escaping (Message) throws(MsgError) -> Message?) { self.transform = transform }

    func begin(_ session: any ClaimSession) throws(MsgError) {}
    var skipping: Set<String> { [] }

    func consider(_ rows: [ClaimRow], in session: any ClaimSession) throws(MsgError) -> [ClaimAnswer] {
        try rows.map { (row) throws(MsgError) -> ClaimAnswer in
            // A damaged record is shown to the transform (to say so), but stored as
            // such by the loop whatever it answers.
            if row.record.message.isDamaged {
                _ = try transform(row.record.message)
                return .skip
            }
            guard let x = try transform(row.record.message) else { return .skip }
            return .take(EncodedMessage(updating: row.record, to: x))
        }
    }

    func finish() -> [String: String?] { [:] }
}

extension Store {
    /// Runs a claim through ``ClaimLoop`` in one ``claimSession(_:)``.
    /// - Throws: `storeIO`, `corrupt`, or what the planner throws (then nothing is stored).
    public func claim(_ request: ClaimRequest, _ planner: any ClaimPlanner) throws(MsgError) -> ClaimResult {
        try claimSession { (session) throws(MsgError) in try ClaimLoop.run(request, planner, in: session) }
    }

    /// Atomically takes up to `limit` records matching `query` in FIFO order, passes
    /// each to `transform`, and stores those it returns (nil: leave the record
    /// alone), in one durable commit. A damaged record is passed too, and stored as
    /// its stand-in (`dead`) whatever `transform` answers.
    /// - Returns: the records stored, with their text, in FIFO order.
    /// - Throws: `storeIO`, `corrupt`, or what `transform` throws (then nothing is stored).
    public func claim(_ query: Query, limit: Int, _ transform: (Message) throws(MsgError) -> Message?) throws(MsgError) -> [EncodedMessage] {
        if limit <= 0 { return [] }
        return try claim(ClaimRequest(query: query, limit: limit, chunk: 1024), transform).taken
    }

    /// ``claim(_:limit:_:)`` for `request`: from its position, up to its limit, saying
    /// where it stopped, so a long pass goes on in claims of bounded size.
    public func claim(_ request: ClaimRequest, _ transform: (Message) throws(MsgError) -> Message?) throws(MsgError) -> ClaimResult {
        try withoutActuallyEscaping(transform) { (t) throws(MsgError) -> ClaimResult in
            try claim(request, TransformPlanner(t))
        }
    }
}
