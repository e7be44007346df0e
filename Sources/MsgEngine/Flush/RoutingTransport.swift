#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// One transport made of several, chosen per message by its recipient: the config
/// file's `[destination PATTERN]` sections with a `transport` (``Settings/routes``),
/// as Postfix's transport(5) table routes mail, so one `flush --watch` serves mail,
/// webhooks and commands at once. The first pattern (fnmatch(3), as `--to`) that
/// matches a message's `to` names its transport; the rest take the default.
///
/// A call is split by route in the order given and the outcomes put back in that
/// order, so each destination's FIFO order holds (a destination's messages all take
/// one route). It may run several messages in flight when any route does; the
/// dispatcher then hands it one message per destination a slice, which every route
/// takes.
public final class RoutingTransport: Transport, DeliveryReceipts {
    public struct Route {
        public let pattern: String
        public let url: String
        public let transport: any Transport
        public init(pattern: String, url: String, transport: any Transport) {
            self.pattern = pattern
            self.url = url
            self.transport = transport
        }
    }

    let routes: [Route]
    let fallback: any Transport
    /// The transports that keep receipts.
    private let keepers: [any DeliveryReceipts]

    public var receipts: (any DeliveryReceipts)? { keepers.isEmpty ? nil : self }

    public init(routes: [Route], fallback: any Transport) {
        self.routes = routes
        self.fallback = fallback
        keepers = ([fallback] + routes.map(\.transport)).compactMap(\.receipts)
    }

    /// The index of the route `to` takes; nil: the default.
    public static func route(of to: String, patterns: [String]) -> Int? {
        patterns.firstIndex { fnmatch($0, to, 0) == 0 }
    }

    private func transport(at index: Int?) -> any Transport {
        index.map { routes[$0].transport } ?? fallback
    }

    public var parallelism: Int {
        routes.reduce(fallback.parallelism) { max($0, $1.transport.parallelism) }
    }

    public func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> [DeliveryOutcome] {
        let patterns = routes.map(\.pattern)
        var groups: [Int?: [Int]] = [:]
        var order: [Int?] = []
        for (i, r) in records.enumerated() {
            let route = Self.route(of: r.to, patterns: patterns)
            if groups[route] == nil { order.append(route) }
            groups[route, default: []].append(i)
        }
        if order.count == 1, let only = order.first { return transport(at: only).deliver(records, deadline: deadline) }
        var outcomes = [DeliveryOutcome](repeating: .failed(MsgError(.remote, "not attempted"), retryAfter: nil), count: records.count)
        for route in order {
            let indices = groups[route] ?? []
            let got = transport(at: route).deliver(indices.map { records[$0] }, deadline: deadline)
            for (k, i) in indices.enumerated() where k < got.count { outcomes[i] = got[k] }
        }
        return outcomes
    }

    /// The receipt the route that delivered `id` kept, if it keeps them.
    public func takeReceipt(for id: String) -> JSONValue? {
        for keeper in keepers {
            if let r = keeper.takeReceipt(for: id) { return r }
        }
        return nil
    }

    /// Whether any route says it has the message (recover knows ids, not recipients):
    /// delivered when one says so, not when every one says not, else unknown.
    public func lookup(_ ids: [String]) throws(MsgError) -> [Bool?] {
        var answers = [Bool?](repeating: false, count: ids.count)
        for t in [fallback] + routes.map(\.transport) {
            let got = try t.lookup(ids)
            for i in ids.indices {
                let a = i < got.count ? got[i] : nil
                if answers[i] == true { continue }
                answers[i] = a == true ? true : (a == nil ? nil : answers[i])
            }
        }
        return answers
    }

    public func lookup(_ id: String) throws(MsgError) -> Bool? {
        try lookup([id]).first ?? nil
    }
}
