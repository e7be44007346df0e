import MsgKit

/// `queue ls` and `queue count`: records matching a query, in FIFO order.
public struct Listing {
    /// The filters of `ls` and `count`: the store's query, and what it cannot ask.
    public var query: Query
    public var filter: MessageFilter

    /// A listing of `query` narrowed by `filter`.
    public init(query: Query, filter: MessageFilter = MessageFilter()) {
        self.query = query
        self.filter = filter
    }

    /// Writes the matching records. - Throws: `storeIO`, `corrupt`.
    /// In `msg shell`, Ctrl-C ends a long listing early (asked every 4096 records read).
    public func write(from store: any Store, formatter: RecordFormatter, includeHistory: Bool) throws(MsgError) {
        var written = 0
        let stop = StopRequest()
        func goOn() -> Bool {
            written += 1
            return written & 4095 != 0 || stop.reason == nil
        }
        if !filter.isEmpty {
            // Decoded to be asked; the limit counts matches, not records read.
            var storeQuery = query
            storeQuery.limit = nil
            var left = query.limit ?? Int.max
            guard left > 0 else { return try formatter.finish() }
            try store.list(storeQuery) { (r) throws(MsgError) -> Bool in
                guard filter.matches(r.message) else { return goOn() }
                try formatter.write(r.message)
                left -= 1
                return left > 0 && goOn()
            }
        } else if formatter.acceptsJSON {
            try store.listJSON(query, includeHistory: includeHistory) { (json) throws(MsgError) -> Bool in
                try formatter.writeJSON(json)
                return goOn()
            }
        } else {
            try store.list(query) { (r) throws(MsgError) -> Bool in
                try formatter.write(r.message)
                return goOn()
            }
        }
        try formatter.finish()
    }

    /// The number of matching records. - Throws: `storeIO`, `corrupt`.
    public func count(in store: any Store) throws(MsgError) -> Int {
        guard !filter.isEmpty else {
            if let n = try Self.counted(query, in: store) { return n }
            return try store.count(query)
        }
        return try ids(in: store).count
    }

    /// `q` counted from the counts the store keeps, when it asks for statuses or a
    /// recipient and nothing else; nil otherwise, or when the store keeps none.
    static func counted(_ q: Query, in store: any Store) throws(MsgError) -> Int? {
        guard q.since == nil, q.until == nil, q.dueBy == nil, q.leaseEndedBy == nil, q.updatedBy == nil, q.ids == nil,
              q.statuses != nil || q.to != nil, let counts = try store.capabilities.journal?.counts(now: .now(), excluding: []),
              let n = counts.tally.records(statuses: q.statuses, to: q.to) else { return nil }
        return q.limit.map { min($0, n) } ?? n
    }

    /// The ids `given` that match, in the order given; without them, the ids of the
    /// matching records (``ids(in:)``). - Throws: `storeIO`, `corrupt`.
    public func narrow(_ given: [String]?, in store: any Store) throws(MsgError) -> [String] {
        guard let given else { return try ids(in: store) }
        var listing = self
        listing.query.ids = Set(given)
        let keep = Set(try listing.ids(in: store))
        return given.filter { keep.contains($0) }
    }

    /// The ids of the matching records, in FIFO order. - Throws: `storeIO`, `corrupt`.
    public func ids(in store: any Store) throws(MsgError) -> [String] {
        var storeQuery = query
        storeQuery.limit = nil
        let limit = query.limit ?? Int.max
        var ids: [String] = []
        guard limit > 0 else { return ids }
        try store.list(storeQuery) { (r) throws(MsgError) -> Bool in
            if filter.matches(r.message) { ids.append(r.message.id) }
            return ids.count < limit
        }
        return ids
    }
}
