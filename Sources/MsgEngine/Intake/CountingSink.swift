import MsgKit
import Synchronization

/// The sink a listener delivers into, counting what it took and what failed, for
/// `listen --metrics`. It only forwards: one thread at a time uses it, as a sink.
final class CountingSink: Transport, @unchecked Sendable {
    private let sink: any Transport
    let delivered = Atomic<Int>(0)
    let failed = Atomic<Int>(0)

    init(_ sink: any Transport) { self.sink = sink }

    var receipts: (any DeliveryReceipts)? { sink.receipts }

    var parallelism: Int { sink.parallelism }

    func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> [DeliveryOutcome] {
        let outcomes = sink.deliver(records, deadline: deadline)
        var ok = 0
        for outcome in outcomes { if case .delivered = outcome { ok += 1 } }
        delivered.add(ok, ordering: .relaxed)
        failed.add(outcomes.count - ok, ordering: .relaxed)
        return outcomes
    }

    func lookup(_ id: String) throws(MsgError) -> Bool? { try sink.lookup(id) }
    func lookup(_ ids: [String]) throws(MsgError) -> [Bool?] { try sink.lookup(ids) }
}

/// A listener's statistics, asked from the metrics thread (the protocol says any
/// thread may ask).
final class StatisticsHandOff: @unchecked Sendable {
    let listener: any ListenerStatistics
    init(_ listener: any ListenerStatistics) { self.listener = listener }
}
