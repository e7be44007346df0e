import MsgKit

/// Inclusion proofs of RFC 6962 (2.1.1) for many leaves at once: the hashes of the
/// subtrees beside the leaves' ways up to the root, each once, from which the root
/// is computed again with the leaves' own hashes, without the other leaves.
public enum LedgerProof {}

extension LedgerProof {
    /// A subtree of the tree: leaves `lo..<hi`, and its hash.
    public struct Node: Sendable, Equatable {
        public var lo: Int
        public var hi: Int
        public var hash: Digest
        public init(lo: Int, hi: Int, hash: Digest) {
            self.lo = lo
            self.hi = hi
            self.hash = hash
        }
    }

    /// What proves the leaves at `targets` (sorted, distinct) all at once in the tree
    /// of `size` leaves whose hashes `next` gives in order: the hashes of the largest
    /// subtrees holding none of them beside the ways up from them, each once (the
    /// leaves of a dense export share most of their way), and the targets' own hashes.
    public static func multiproof(size: Int, targets: [Int], next: () throws(MsgError) -> Digest) throws(MsgError)
        -> (root: Digest, nodes: [Node], leaves: [Int: Digest]) {
        var nodes: [Node] = []
        var leaves: [Int: Digest] = [:]
        guard size > 0 else { return (try Digest.sha256([]), [], [:]) }
        var t = 0 // the next target at or after the walk
        /// The subtree's hash, and whether it holds a target.
        func walk(_ lo: Int, _ hi: Int) throws(MsgError) -> (Digest, Bool) {
            if hi - lo == 1 {
                let h = try next()
                let hit = t < targets.count && targets[t] == lo
                if hit {
                    leaves[lo] = h
                    t += 1
                }
                return (h, hit)
            }
            var k = 1
            while k * 2 < hi - lo { k *= 2 }
            let (left, l) = try walk(lo, lo + k)
            let (right, r) = try walk(lo + k, hi)
            if l && !r { nodes.append(Node(lo: lo + k, hi: hi, hash: right)) }
            if r && !l { nodes.append(Node(lo: lo, hi: lo + k, hash: left)) }
            return (try LedgerTree.node(left, right), l || r)
        }
        let (root, any) = try walk(0, size)
        if !any { nodes.append(Node(lo: 0, hi: size, hash: root)) }
        return (root, nodes, leaves)
    }

    /// The root of the tree of `size` leaves made from the hashes of the leaves
    /// proven (`leaves`) and of the subtrees beside them (`nodes`); nil when they do
    /// not make one: a subtree with a proven leaf in it is always computed from its
    /// leaves, never taken as given.
    public static func root(size: Int, leaves: [Int: Digest], nodes: [Node]) throws(MsgError) -> Digest? {
        let proven = leaves.keys.sorted()
        var given: [Int: [Int: Digest]] = [:]
        for n in nodes { given[n.lo, default: [:]][n.hi] = n.hash }
        /// Whether a proven leaf lies in `lo..<hi`.
        func holds(_ lo: Int, _ hi: Int) -> Bool {
            var a = 0, b = proven.count
            while a < b {
                let mid = (a + b) / 2
                if proven[mid] < lo { a = mid + 1 } else { b = mid }
            }
            return a < proven.count && proven[a] < hi
        }
        func hash(_ lo: Int, _ hi: Int) throws(MsgError) -> Digest? {
            guard holds(lo, hi) else { return given[lo]?[hi] }
            if hi - lo == 1 { return leaves[lo] }
            var k = 1
            while k * 2 < hi - lo { k *= 2 }
            guard let l = try hash(lo, lo + k), let r = try hash(lo + k, hi) else { return nil }
            return try LedgerTree.node(l, r)
        }
        guard size > 0, proven.allSatisfy({ $0 >= 0 && $0 < size }) else { return nil }
        return try hash(0, size)
    }
}
