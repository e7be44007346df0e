import MsgKit
import NIOCore
import NIOPosix
import Synchronization

/// Delivers what every connection receives into the listener's sink, from one
/// thread, with group commit: records that arrive while a batch is being made
/// durable go together in the next batch (one directory sync for a file drop).
///
/// Event loops never block on the sink: they hand over a job and get a future,
/// completed on their own loop.
final class SinkDeliverer: Sendable {
    enum Job: Sendable {
        case deliver(Message, EventLoopPromise<DeliveryOutcome>)
        case lookup(String, EventLoopPromise<Bool?>)
    }

    private struct State {
        var jobs: [Job] = []
        var draining = false
        var counts = Counts()
    }

    /// What the sink did with the records it was given.
    struct Counts: Sendable, Equatable {
        /// Records delivered by this listener.
        var delivered = 0
        /// Records the sink had already (sent again): acknowledged, not delivered twice.
        var again = 0
    }

    private let state = Mutex(State())
    private let sink: SinkBox
    private let deadline: MsgDuration
    private let pool: NIOThreadPool

    init(sink: any Transport, deadline: MsgDuration) {
        self.sink = SinkBox(sink)
        self.deadline = deadline
        pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
    }

    /// Queues a job; starts a drain on the delivery thread when none is running.
    func submit(_ job: Job) {
        let start = state.withLock { s in
            s.jobs.append(job)
            if s.draining { return false }
            s.draining = true
            return true
        }
        if start { pool.submit { _ in self.drain() } }
    }

    /// What the sink has done so far.
    var counts: Counts { state.withLock { $0.counts } }

    /// Waits for the jobs queued so far and stops the delivery thread.
    func shutdown() {
        try? pool.syncShutdownGracefully()
    }

    private func drain() {
        while true {
            let jobs = state.withLock { s -> [Job] in
                if s.jobs.isEmpty {
                    s.draining = false
                    return []
                }
                defer { s.jobs.removeAll(keepingCapacity: true) }
                return s.jobs
            }
            if jobs.isEmpty { return }
            run(jobs)
        }
    }

    /// Runs jobs in order; consecutive deliveries go to the sink as one batch.
    private func run(_ jobs: [Job]) {
        var batch: [(Message, EventLoopPromise<DeliveryOutcome>)] = []
        for job in jobs {
            switch job {
            case .deliver(let m, let promise):
                batch.append((m, promise))
            case .lookup(let id, let promise):
                deliver(batch)
                batch.removeAll()
                do throws(MsgError) { promise.succeed(try sink.transport.lookup(id)) } catch { promise.fail(error) }
            }
        }
        deliver(batch)
    }

    /// One sink call for the batch; an id that comes twice is delivered once.
    private func deliver(_ batch: [(Message, EventLoopPromise<DeliveryOutcome>)]) {
        guard !batch.isEmpty else { return }
        var unique: [Message] = []
        var slot: [String: Int] = [:]
        for (m, _) in batch where slot[m.id] == nil {
            slot[m.id] = unique.count
            unique.append(m)
        }
        // Asked before, so a record sent again is not counted as delivered again (a
        // sink that cannot tell counts every one).
        let had = unique.map { (try? sink.transport.lookup($0.id)) ?? nil }
        let outcomes = sink.transport.deliver(unique.map { EncodedMessage($0) }, deadline: deadline)
        var counts = Counts()
        for (outcome, had) in zip(outcomes, had) {
            guard case .delivered = outcome else { continue }
            if had == true { counts.again += 1 } else { counts.delivered += 1 }
        }
        state.withLock {
            $0.counts.delivered += counts.delivered
            $0.counts.again += counts.again
        }
        for (m, promise) in batch {
            let i = slot[m.id] ?? 0
            promise.succeed(i < outcomes.count ? outcomes[i]
                : .failed(MsgError(.remote, "the inbox reported no outcome"), retryAfter: nil))
        }
    }
}

/// The sink transport, handed to the delivery thread.
///
/// `@unchecked Sendable` is safe because only ``SinkDeliverer``'s drain uses it, and
/// `draining` (under the deliverer's lock) lets one drain run at a time.
private final class SinkBox: @unchecked Sendable {
    let transport: any Transport
    init(_ transport: any Transport) { self.transport = transport }
}
