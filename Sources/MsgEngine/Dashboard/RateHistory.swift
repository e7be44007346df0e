import Dispatch
import MsgKit
import Synchronization

/// The overview's charts: the store's counts of attempts sent and failed, read
/// every few seconds by `msg web` while it runs, as per-minute figures for the last
/// day. The counts are the store's own (`msg metrics`' `msg_attempts_total`), so
/// what a chart shows is what every process sent, not only this one; what happened
/// before `msg web` started is Prometheus's to keep (share/msg/grafana).
final class RateHistory: Sendable {
    /// One reading: when, and the totals then.
    struct Reading: Sendable { var at: Int64; var sent: Int; var failed: Int }

    private let readings = Mutex<[Reading]>([])
    /// Readings kept: a day at one every 15 seconds.
    static let capacity = 24 * 60 * 4

    /// Reads `totals` now and every `seconds` after, until `stop`; a failed read is skipped.
    func start(every seconds: Int, stop: @escaping @Sendable () -> Bool, totals: @escaping @Sendable () throws(MsgError) -> (sent: Int, failed: Int)) {
        let queue = DispatchQueue(label: "msg.web.rates")
        @Sendable func tick() {
            guard !stop() else { return }
            if let t = try? totals() { add(Reading(at: Timestamp.now().milliseconds, sent: t.sent, failed: t.failed)) }
            queue.asyncAfter(deadline: .now() + .seconds(seconds), execute: tick)
        }
        queue.async(execute: tick)
    }

    func add(_ r: Reading) {
        readings.withLock { all in
            all.append(r)
            if all.count > Self.capacity { all.removeFirst(all.count - Self.capacity) }
        }
    }

    /// Sent and failed in each `bucket` minutes of the last `minutes`, oldest first;
    /// nil where no two readings span the bucket.
    func buckets(minutes: Int, bucket: Int, now: Int64) -> [(sent: Int, failed: Int)?] {
        let all = readings.withLock { $0 }
        let width = Int64(bucket) * 60_000
        let count = minutes / bucket
        let start = now - Int64(count) * width
        return (0..<count).map { i in
            let (from, to) = (start + Int64(i) * width, start + Int64(i + 1) * width)
            // The last reading at or before each edge; the counts only grow.
            guard let a = all.last(where: { $0.at <= from }) ?? all.first(where: { $0.at <= to }),
                  let b = all.last(where: { $0.at <= to }), b.at > a.at else { return nil }
            return (max(0, b.sent - a.sent), max(0, b.failed - a.failed))
        }
    }

    /// The chart of ``buckets(minutes:bucket:now:)`` as SVG: a bar a bucket, sent
    /// above the line, failed below; no script, no style attribute.
    func chart(minutes: Int, bucket: Int, now: Timestamp) -> HTML {
        let data = buckets(minutes: minutes, bucket: bucket, now: now.milliseconds)
        let top = max(1, data.compactMap { $0.map { max($0.sent, $0.failed) } }.max() ?? 1)
        let h = 160
        let bar = 600 / Double(max(1, data.count))
        var svg = HTML()
        svg.tag("<figure class=\"chart\"><svg viewBox=\"0 0 600 160\" role=\"img\" preserveAspectRatio=\"none\"><line class=\"axis\" x1=\"0\" y1=\"80\" x2=\"600\" y2=\"80\"></line>")
        var sent = 0, failed = 0, known = 0
        for (i, d) in data.enumerated() {
            guard let d else { continue }
            known += 1
            sent += d.sent
            failed += d.failed
            let x = Double(i) * bar
            let hs = Double(d.sent) / Double(top) * Double(h / 2 - 4)
            let hf = Double(d.failed) / Double(top) * Double(h / 2 - 4)
            svg.tag("<rect class=\"sent\" x=\"")
            svg.text(Self.number(x))
            svg.tag("\" y=\"")
            svg.text(Self.number(80 - hs))
            svg.tag("\" width=\"")
            svg.text(Self.number(max(1, bar - 1)))
            svg.tag("\" height=\"")
            svg.text(Self.number(hs))
            svg.tag("\"></rect><rect class=\"failed\" x=\"")
            svg.text(Self.number(x))
            svg.tag("\" y=\"80\" width=\"")
            svg.text(Self.number(max(1, bar - 1)))
            svg.tag("\" height=\"")
            svg.text(Self.number(hf))
            svg.tag("\"></rect>")
        }
        svg.tag("</svg><figcaption>")
        if known == 0 {
            svg.text("no readings yet: msg web reads the store's counts every 15 seconds while it runs")
        } else {
            svg.text("\(sent) sent, \(failed) failed in the \(known * bucket) minute\(known * bucket == 1 ? "" : "s") msg web has watched (the highest bar: \(top))")
        }
        svg.tag("</figcaption></figure>")
        return svg
    }

    static func number(_ d: Double) -> String {
        String(Double(Int(d * 10)) / 10)
    }
}
