import MsgKit
import Synchronization

/// A store handle that threads take turns with (`msg web`'s pages, `--metrics`'
/// scrapes): one at a time, as a handle is never used by two threads at once.
final class StoreTurns: @unchecked Sendable {
    private let store: any Store
    private let lock = Mutex(())

    init(_ store: any Store) { self.store = store }

    func turn<R>(_ body: (any Store) throws(MsgError) -> R) throws(MsgError) -> R {
        try lock.withLock { (_) throws(MsgError) -> R in try body(store) }
    }
}
