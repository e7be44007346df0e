import MsgKit

/// `queue ls` and `queue count`: records matching a query, in FIFO order.
public struct Listing {
    /// The filters of `ls` and `count`.
    public var query: Query

    /// A listing of `query`.
    public init(query: Query) { self.query = query }

    /// Writes the matching records. - Throws: `storeIO`, `corrupt`.
    /// In `msg shell`, Ctrl-C ends a long listing early (asked every 4096 records).
    public func write(from store: any Store, formatter: RecordFormatter, includeHistory: Bool) throws(MsgError) {
        var written = 0
        let stop = StopRequest()
        func goOn() -> Bool {
            written += 1
            return written & 4095 != 0 || stop.reason == nil
        }
        if formatter.acceptsJSON {
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
        try store.count(query)
    }
}
