#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import CNATS
import MsgKit
import MsgSupport

/// The `nats://` transport (msg-nats(7)): publishes each message into a JetStream
/// stream and reports it sent only when the stream's PubAck says it is stored.
/// `Nats-Msg-Id` is the message's id, so the stream takes a message published
/// again (after a crash between its PubAck and msg's record of it) as a
/// duplicate: acknowledged, not stored twice. Up to `concurrency` publishes await
/// their acknowledgements at once on one connection (libnats's asynchronous
/// publish); outcomes still come back in the order of the records.
public final class NATSTransport: Transport, DeliveryReceipts {
    let settings: NATSSettings
    private let connection: NATSConnection

    public var parallelism: Int { settings.concurrency }

    public var receipts: (any DeliveryReceipts)? { self }

    /// Reads the URL; connects on the first delivery. - Throws: `config`.
    public init(url: PluginURL) throws(MsgError) {
        settings = try NATSSettings(url)
        connection = NATSConnection(settings: settings)
    }

    /// With `concurrency=1` one message after another, each awaiting its PubAck
    /// before the next is published; above, all of `records` (at most one a
    /// destination, the host sees to it) in flight at once.
    public func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> [DeliveryOutcome] {
        PipeSignalBlock.around {
            guard settings.concurrency > 1 else {
                return records.flatMap { publishTogether(CollectionOfOne($0), deadline: deadline) }
            }
            return publishTogether(records, deadline: deadline)
        }
    }

    /// Publishes `records` without waiting between them, then waits for their
    /// acknowledgements until `deadline` from now.
    private func publishTogether(_ records: some Collection<EncodedMessage>, deadline: MsgDuration) -> [DeliveryOutcome] {
        let budget = max(1, deadline.milliseconds)
        let end = Self.now() + UInt64(budget) * 1_000_000
        do throws(MsgError) {
            try connection.open(timeout: min(settings.connectTimeout, budget), stall: budget)
        } catch {
            return records.map { _ in .failed(error, retryAfter: nil) }
        }
        guard let context = connection.context else {
            return records.map { _ in .failed(MsgError(.unreachable, "nats: not connected to \(settings.server)"), retryAfter: nil) }
        }
        let board = connection.board
        board.begin(count: records.count)
        for (index, record) in records.enumerated() {
            do throws(MsgError) {
                let subject = try settings.subject.subject(for: record.message)
                try publish(record, subject: subject, index: index, context: context)
            } catch {
                board.settle(index: index, .failed(error, retryAfter: nil))
            }
        }
        connection.flush(within: Int64((end &- Self.now()) / 1_000_000))
        let outcomes = board.wait(until: end) { lost in
            .failed(lost ? MsgError(.unreachable, "nats: the connection to \(settings.server) was lost before JetStream acknowledged the message")
                         : MsgError(.timeout, "nats: no acknowledgement from JetStream within the deadline"), retryAfter: nil)
        }
        connection.dropPending()
        return outcomes
    }

    /// The stream and sequence JetStream stored message `id` at (and `duplicate`
    /// when it held it already), kept in its `sent` event.
    public func takeReceipt(for id: String) -> JSONValue? {
        connection.board.takeReceipt(for: id)
    }

    /// Publishes one message without waiting for its acknowledgement, which comes
    /// to the board. - Throws: `rejected` for a message NATS cannot carry, or the
    /// failure of the publish itself.
    private func publish(_ record: EncodedMessage, subject: String, index: Int, context: OpaquePointer) throws(MsgError) {
        let message = record.message
        var natsMessage: OpaquePointer?
        let payload = settings.inputBody ? Array(message.body.utf8) : record.deliveredJSON
        let created = payload.withUnsafeBytes { bytes in
            natsMsg_Create(&natsMessage, subject, nil, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(bytes.count))
        }
        defer { natsMsg_Destroy(natsMessage) }
        guard created == NATS_OK, natsMessage != nil else {
            throw MsgError(.rejected, "nats: cannot make a message of this record: \(NATSFailure.lastError(created))")
        }
        for field in message.headers {
            if let problem = Self.headerProblem(field) { throw MsgError(.rejected, "nats: header '\(field.key)' \(problem)") }
            guard natsMsgHeader_Add(natsMessage, field.key, field.value) == NATS_OK else {
                throw MsgError(.rejected, "nats: header '\(field.key)' cannot be carried")
            }
        }
        var options = jsPubOptions()
        // No MaxWait: libnats would arm a timer for each message (a lock and a
        // wake-up of its timer thread each); the board waits for the call instead.
        jsPubOptions_Init(&options)
        let board = connection.board
        let status = message.id.withCString { id in
            (settings.expectStream ?? "").withCString { stream in
                options.MsgId = id
                if settings.expectStream != nil { options.ExpectStream = stream }
                board.expect(id: message.id, index: index)
                return js_PublishMsgAsync(context, &natsMessage, &options)
            }
        }
        guard status == NATS_OK else {
            let error = NATSFailure.publishing(status, code: 0, text: NATSFailure.lastError(status), subject: subject,
                                               fixedSubject: settings.subject.isFixed)
            board.record(id: message.id, outcome: .failed(error, retryAfter: nil))
            return
        }
    }

    /// Why a header cannot be a NATS header, or nil: NATS headers are HTTP-like
    /// lines, so a name is a token and a value one line.
    static func headerProblem(_ field: Headers.Field) -> String? {
        if field.key.isEmpty || !field.key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: ":") }) {
            return "is not a NATS header name (printable ASCII, no space or ':')"
        }
        if field.key.lowercased().hasPrefix("nats-") { return "is NATS's own (Nats-*); msg sets Nats-Msg-Id itself" }
        if field.value.utf8.contains(where: { $0 == 0x0d || $0 == 0x0a || $0 == 0 }) { return "has a line break or NUL in its value" }
        return nil
    }

    static func now() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
    }
}
