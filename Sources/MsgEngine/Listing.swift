import MsgKit

/// `queue ls` and `queue count`: records matching a query, in FIFO order.
public struct Listing {
    /// The filters of `ls` and `count`.
    public var query: Query

    /// A listing of `query`.
    public init(query: Query) { self.query = query }

    /// Writes the matching records. - Throws: `storeIO`, `corrupt`.
    public func write(from store: any Store, formatter: RecordFormatter, includeHistory: Bool) throws(MsgError) {
        if formatter.acceptsJSON {
            try store.listJSON(query, includeHistory: includeHistory) { (json) throws(MsgError) -> Bool in
                try formatter.writeJSON(json)
                return true
            }
        } else {
            try store.list(query) { (m) throws(MsgError) -> Bool in
                try formatter.write(m)
                return true
            }
        }
        try formatter.finish()
    }

    /// The number of matching records. - Throws: `storeIO`, `corrupt`.
    public func count(in store: any Store) throws(MsgError) -> Int {
        try store.count(query)
    }
}
