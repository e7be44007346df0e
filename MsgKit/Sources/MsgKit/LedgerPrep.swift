
/// What a change needs of the ledger, made for a batch on all cores before the
/// batch's statements run (the hashing is most of the ledger's cost): the
/// content's fingerprint and the leaf of its common case, its last history entry
/// appended (a record stored anew: its state). Both stores use it.
public struct LedgerPrep: Sendable {
    public let print: Int64
    /// Nil when it could not be made here (libcrypto missing): made again in line,
    /// where its error is thrown.
    public let leaf: [UInt8]?

    public init(_ r: EncodedMessage, stored: Bool) {
        print = LedgerLeaf.contentPrint(r)
        // Read out of its box once (each read copies the message).
        let m = r.message
        let n = m.history.count
        leaf = stored ? try? LedgerLeaf.bytes(r, m, entry: nil) : n > 0 ? try? LedgerLeaf.bytes(r, m, entry: n - 1) : []
    }

    /// The leaf, made again (and its error thrown) when it could not be beforehand.
    public func leaf(_ r: EncodedMessage, stored: Bool) throws(MsgError) -> [UInt8] {
        if let leaf { return leaf }
        let n = r.message.history.count
        return stored ? try LedgerLeaf.bytes(r, entry: nil) : n > 0 ? try LedgerLeaf.bytes(r, entry: n - 1) : []
    }

    /// For each of `records`, on all cores.
    public static func batch(_ records: [EncodedMessage], stored: Bool) -> [LedgerPrep] {
        parallelMap(records) { LedgerPrep($0, stored: stored) }
    }
}
