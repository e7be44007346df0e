/// A transport that keeps what the destination answered for each message it took
/// (a stream's name and sequence, a server's queue id), which the host writes into
/// the message's `sent` or `delivered` history event as `receipt` (ABI 7.5, an
/// addition: a transport built before it simply has none).
public protocol DeliveryReceipts: AnyObject {
    /// The receipt of message `id`, delivered by the last
    /// ``Transport/deliver(_:deadline:)`` call, or nil; asked at most once an id,
    /// on the thread that made the call, after it returned.
    func takeReceipt(for id: String) -> JSONValue?
}
