/// What keeps the destination's answer for each message a transport delivered
/// (``Transport/receipts``: a stream's name and sequence, a server's queue id),
/// which the host writes into the message's `sent` or `delivered` history event as
/// `receipt`.
public protocol DeliveryReceipts: AnyObject {
    /// The receipt of message `id`, delivered by the last
    /// ``Transport/deliver(_:deadline:)`` call, or nil; asked at most once an id,
    /// on the thread that made the call, after it returned.
    func takeReceipt(for id: String) -> JSONValue?
}
