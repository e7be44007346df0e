import Dispatch
import Synchronization

/// `items.map(transform)` split over two cores when there are enough items to pay
/// for it, in order (decoding a claim's rows, hashing a batch's ledger leaves).
public func parallelMap<T: Sendable, R: Sendable>(_ items: [T], _ transform: @Sendable (T) -> R) -> [R] {
    guard items.count >= 64 else { return items.map(transform) }
    let parts = 2
    let size = (items.count + parts - 1) / parts
    let results = Mutex<[[R]]>(Array(repeating: [], count: parts))
    DispatchQueue.concurrentPerform(iterations: parts) { part in
        let slice = items[min(items.count, part * size)..<min(items.count, (part + 1) * size)]
        let mapped = slice.map(transform)
        results.withLock { $0[part] = mapped }
    }
    return results.withLock { $0.flatMap { $0 } }
}
