/// The sizes msg holds records to, so that a record it accepts is one its own
/// transports deliver with their defaults.
public enum RecordLimits {
    /// The largest record msg accepts, as its JSON text with history: 1 MiB. `compose`,
    /// `queue add` and `queue edit` refuse a larger one, naming this limit; it is also
    /// the longest input line.
    public static let maxRecordBytes = 1 << 20

    /// The largest delivered record (``Message/writeDelivered(to:)``): an accepted
    /// record, whose history and lease are left out, plus what msg sets while sending
    /// it (status, attempts, times, a last error of at most ``maxErrorMessageBytes``).
    /// A receiver's default line limit (`msg listen`).
    public static let maxDeliveredBytes = maxRecordBytes + (16 << 10)

    /// The longest error message kept in a record (`last_error`, history); longer ones
    /// (a destination's whole answer, say) are cut with `…`.
    public static let maxErrorMessageBytes = 1024

    /// The error for a record of `size` bytes over ``maxRecordBytes``.
    public static func tooLarge(_ size: Int) -> MsgError {
        MsgError(.badInput, "the record is \(size) bytes, over msg's limit of \(maxRecordBytes) bytes (1 MiB)")
    }
}
