import MsgKit

/// A message id as the key of ``SQLiteStore/rowids``: the 128 bits of a UUID (the
/// ids msg makes) hash and compare as two integers, where a 36-character text is
/// hashed through SipHash at each lookup and at each neighbour a removal moves;
/// any other id as its text.
struct RowKey: Hashable {
    private let hi: UInt64
    private let lo: UInt64
    private let text: String?

    init(_ id: String) {
        if let (hi, lo) = id.utf8.withContiguousStorageIfAvailable({ UUIDText.bytes($0) }) ?? nil {
            self.hi = hi
            self.lo = lo
            text = nil
        } else {
            hi = 0
            lo = 0
            text = id
        }
    }
}
