/// Delivers records to a destination and says truthfully what happened (docs/DESIGN.md 6).
///
/// ## Implementation requirements
/// 1. **Report delivery only when it is durable** at the destination: a message
///    reported delivered is never lost there, whatever happens next.
/// 2. **Deduplicate by id.** Delivering an id again is not a second delivery: the
///    host may resend after a crash between delivery and its acknowledgement.
/// 3. **Order.** Outcomes come back in the order of the messages given.
/// 4. **Classify failures** with a delivery ``MsgError/Code``: `timeout`,
///    `unreachable` (offline: the attempt is not counted), `rate_limited`, `remote`
///    (retryable), `rejected` (permanent: the message becomes `dead`). `config`
///    says the transport cannot deliver anything as configured (a refused token):
///    the host puts that message and the rest back unattempted, stops, and exits 78.
/// 5. **Honour the deadline** of each attempt; report `timeout` past it.
/// 6. **Never crash on a record**: a hostile id or body is `rejected`.
/// 7. **What a destination receives** is the record as ``Message/writeDelivered(to:)``
///    writes it (no lease, no history, status `delivered`), or a part of it such as
///    the body; never the sender's lease.
/// 8. **Parallelism.** ``parallelism`` says how many records one ``deliver(_:deadline:)``
///    call may have in flight at once (1: one after another, in order). The host
///    never puts two records of one destination into a call when it is above 1.
///    A flush with several workers opens one transport per worker and calls them at
///    once: state shared between instances (a static) must be safe for that.
public protocol Transport: AnyObject {
    /// Delivers `records` (as the store holds them, status `sending`) in order, each
    /// within `deadline`.
    /// - Returns: one outcome per record, in the same order.
    func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> [DeliveryOutcome]

    /// Whether `id` has been delivered, or nil when this transport cannot tell.
    /// `recover` uses it to mark an in-doubt message sent instead of sending it again.
    /// - Throws: a delivery error class when the destination cannot be asked.
    func lookup(_ id: String) throws(MsgError) -> Bool?

    /// ``lookup(_:)`` for many ids at once, answering as of one moment; a transport
    /// that can list what it delivered does this in one pass.
    /// - Returns: one answer per id, in order.
    /// - Throws: a delivery error class when the destination cannot be asked.
    func lookup(_ ids: [String]) throws(MsgError) -> [Bool?]

    /// How many records one call may have in flight at once; 1 when they go one after
    /// another (requirement 8).
    var parallelism: Int { get }

    /// What keeps the destination's receipts, or nil when it keeps none.
    var receipts: (any DeliveryReceipts)? { get }
}

extension Transport {
    /// By default records go one after another.
    public var parallelism: Int { 1 }

    /// By default a transport keeps no receipts.
    public var receipts: (any DeliveryReceipts)? { nil }

    /// By default a transport cannot tell what it delivered.
    public func lookup(_ id: String) throws(MsgError) -> Bool? { nil }

    /// By default, one ``lookup(_:)`` per id.
    public func lookup(_ ids: [String]) throws(MsgError) -> [Bool?] {
        var answers: [Bool?] = []
        answers.reserveCapacity(ids.count)
        for id in ids { answers.append(try lookup(id)) }
        return answers
    }
}

/// What happened to one message handed to a transport.
public enum DeliveryOutcome: Sendable, Equatable {
    /// Delivered durably. `confirmed`: the recipient's side confirmed it (status
    /// `delivered`), rather than only accepted it for delivery (status `sent`).
    case delivered(confirmed: Bool)
    /// Not delivered. The error's code is a delivery class; `retryAfter` is a
    /// delay the destination asked for (`rate_limited`).
    case failed(MsgError, retryAfter: MsgDuration?)
}
