import MsgKit

extension Message {
    /// The last error as the views show it (tables, `queue show`): none once the
    /// message went out (sent, delivered, read), whose history keeps the failures
    /// before; the record itself keeps `last_error` as it was.
    public var standingError: Failure? {
        [.sent, .delivered, .read].contains(status) ? nil : lastError
    }
}
