import MsgKit

/// The Merkle tree hash of RFC 6962 (2.1) over leaves given one at a time, in
/// memory of one hash per level: the roots of the complete subtrees so far, whose
/// fold from the right is the root of all (the tree splits at the largest power of
/// two below its size, so its right edge is those subtrees).
public struct LedgerTree: Sendable {
    /// The complete subtrees, largest first: their roots and sizes.
    private var subtrees: [(root: Digest, size: Int)] = []
    /// The leaves so far.
    public private(set) var size = 0

    public init() {}

    /// Adds the next leaf's hash (``LedgerLeaf/hash()``).
    public mutating func append(_ leafHash: Digest) throws(MsgError) {
        var node = (root: leafHash, size: 1)
        while let last = subtrees.last, last.size == node.size {
            subtrees.removeLast()
            node = (try Self.node(last.root, node.root), last.size * 2)
        }
        subtrees.append(node)
        size += 1
    }

    /// The root of the leaves so far; SHA-256 of nothing for none.
    public func root() throws(MsgError) -> Digest {
        guard var r = subtrees.last?.root else { return try Digest.sha256([]) }
        for s in subtrees.dropLast().reversed() { r = try Self.node(s.root, r) }
        return r
    }

    /// SHA-256(0x01 || left || right).
    public static func node(_ left: Digest, _ right: Digest) throws(MsgError) -> Digest {
        var b = [UInt8](repeating: 1, count: 65)
        b.withUnsafeMutableBufferPointer { p in
            left.bytes.withUnsafeBufferPointer { (p.baseAddress! + 1).update(from: $0.baseAddress!, count: 32) }
            right.bytes.withUnsafeBufferPointer { (p.baseAddress! + 33).update(from: $0.baseAddress!, count: 32) }
        }
        return try Digest.sha256(b)
    }
}
