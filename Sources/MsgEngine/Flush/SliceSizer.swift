import MsgKit

/// How many messages of a claimed batch to hand the transport in one call, so that a
/// call lasts about ``target`` whatever the transport's speed.
///
/// A stop request is honoured between calls, so this bounds how long a stop takes:
/// about one call. Fast transports (a file drop that syncs once per call, a TCP
/// window) soon get the whole batch in one call and lose nothing; a slow one (an API
/// answering in 50 ms) gets a few messages per call. Starts at one message, so even
/// the first call of a transport whose every attempt runs to its deadline ends within
/// one deadline; doubles while a full slice takes under half the target, halves when
/// one takes over twice it.
public struct SliceSizer: Sendable, Equatable {
    /// The duration one call should have.
    public let target: MsgDuration
    /// The largest slice (the batch size).
    public let maximum: Int
    /// The size of the next slice.
    public private(set) var size: Int

    /// A sizer starting at `start` messages (at most `maximum`).
    public init(target: MsgDuration = MsgDuration(milliseconds: 250), maximum: Int, start: Int = 1) {
        self.target = target
        self.maximum = max(1, maximum)
        self.size = max(1, min(start, maximum))
    }

    /// Learns from one call: `count` messages took `elapsed`. A slice smaller than
    /// ``size`` (the end of a batch) says nothing about a full one.
    public mutating func observe(count: Int, elapsed: MsgDuration) {
        guard count >= size else { return }
        if elapsed.milliseconds * 2 < target.milliseconds {
            size = min(size * 2, maximum)
        } else if elapsed.milliseconds > target.milliseconds * 2 {
            size = max(1, size / 2)
        }
    }
}
