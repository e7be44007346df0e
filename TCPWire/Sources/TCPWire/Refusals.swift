import NIOCore
import Synchronization

/// Says why connections were refused or closed, without flooding: up to
/// ``perSecond`` lines a second, then one line counting the rest.
final class Refusals: Sendable {
    static let perSecond = 5

    private struct Window {
        var start: Int64 = 0
        var said = 0
        var held = 0
    }

    private let report: @Sendable (String) -> Void
    private let window = Mutex(Window())
    /// Every refusal, said or not (for ``ListenerStatistics``).
    let count = Atomic<Int>(0)

    init(report: @escaping @Sendable (String) -> Void) { self.report = report }

    /// Reports one refusal, e.g. `refused a connection from 10.0.0.7: …`.
    func say(_ line: String) {
        count.add(1, ordering: .relaxed)
        let now = Int64(NIODeadline.now().uptimeNanoseconds / 1_000_000)
        let (lines, held) = window.withLock { w -> (Bool, Int) in
            var held = 0
            if now - w.start >= 1000 {
                held = w.held
                w = Window(start: now)
            }
            guard w.said < Self.perSecond else {
                w.held += 1
                return (false, held)
            }
            w.said += 1
            return (true, held)
        }
        if held > 0 { report("\(held) more refusals in the second before") }
        if lines { report(line) }
    }

    /// Reports the refusals held back and not said yet.
    func flush() {
        let held = window.withLock { w -> Int in
            defer { w.held = 0 }
            return w.held
        }
        if held > 0 { report("\(held) more refusals") }
    }
}
