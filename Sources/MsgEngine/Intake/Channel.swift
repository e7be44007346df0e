import Dispatch
import Synchronization

/// A bounded first-in, first-out hand-over between two threads.
///
/// `send` blocks while `capacity` items wait; `receive` blocks until one is there.
/// Sendable without `@unchecked`: the buffer is behind a `Mutex` and the
/// semaphores are themselves thread-safe.
final class Channel<Item: Sendable>: Sendable {
    private let buffer = Mutex<[Item]>([])
    private let closed = Atomic<Bool>(false)
    private let items = DispatchSemaphore(value: 0)
    // libdispatch traps when a semaphore is freed below its initial value, which a
    // consumer that stops early would leave behind: start at 0 and count up instead.
    private let slots = DispatchSemaphore(value: 0)
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        for _ in 0..<capacity { slots.signal() }
    }

    /// Hands `item` over, waiting for room. Dropped once the channel is closed.
    func send(_ item: Item) {
        slots.wait()
        if closed.load(ordering: .acquiring) {
            slots.signal()
            return
        }
        buffer.withLock { $0.append(item) }
        items.signal()
    }

    func receive() -> Item {
        items.wait()
        let item = buffer.withLock { $0.removeFirst() }
        slots.signal()
        return item
    }

    /// Waits at most `milliseconds` for an item; nil when none came.
    func receive(milliseconds: Int64) -> Item? {
        guard items.wait(timeout: .now() + .milliseconds(Int(clamping: max(0, milliseconds)))) == .success else { return nil }
        let item = buffer.withLock { $0.removeFirst() }
        slots.signal()
        return item
    }

    /// The consumer is gone: a blocked or later `send` returns at once.
    func close() {
        closed.store(true, ordering: .releasing)
        for _ in 0..<capacity { slots.signal() }
    }
}
