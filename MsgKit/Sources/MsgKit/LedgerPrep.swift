
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
        // Read out of its box once (each read copies the message).
        self.init(r.json, r.historyOffset, r.message, stored: stored)
    }

    /// The prep of the record whose text is `text` (its history at `historyOffset`)
    /// and whose message is `m`, for a caller that holds both (the encoder: no box
    /// made, no message copied out of one). Where its content ends is found once,
    /// for the fingerprint and the state's hash.
    init(_ text: [UInt8], _ historyOffset: Int, _ m: Message, stored: Bool) {
        let end = LedgerLeaf.contentEnd(text)
        print = LedgerLeaf.contentPrint(text, contentEnd: end)
        let n = m.history.count
        if stored {
            leaf = try? LedgerLeaf.bytes(text, historyOffset, m, entry: nil, contentEnd: end)
        } else if n > 0 {
            leaf = try? LedgerLeaf.bytes(text, historyOffset, m, entry: n - 1, contentEnd: end)
        } else {
            leaf = []
        }
    }

    /// The leaf, made again (and its error thrown) when it could not be beforehand.
    public func leaf(_ r: EncodedMessage, stored: Bool) throws(MsgError) -> [UInt8] {
        if let leaf { return leaf }
        let n = r.message.history.count
        return stored ? try LedgerLeaf.bytes(r, entry: nil) : n > 0 ? try LedgerLeaf.bytes(r, entry: n - 1) : []
    }

    /// For each of `records`: what ``EncodedMessage/init(_:preparingLedger:)`` made
    /// for the change beforehand, the rest on all cores.
    public static func batch(_ records: [EncodedMessage], stored: Bool) -> [LedgerPrep] {
        var made: [LedgerPrep] = []
        made.reserveCapacity(records.count)
        for r in records {
            guard let prep = r.prepared(stored: stored) else {
                return parallelMap(records) { $0.prepared(stored: stored) ?? LedgerPrep($0, stored: stored) }
            }
            made.append(prep)
        }
        return made
    }
}
