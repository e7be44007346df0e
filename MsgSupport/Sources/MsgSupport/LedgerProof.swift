import MsgKit

/// Inclusion proofs of RFC 6962 (2.1.1, checked as RFC 9162 2.1.3.2 does): that a
/// leaf is at its place in a tree of a given size and root, from the hashes of the
/// subtrees beside its way up, without the other leaves.
public enum LedgerProof {
    /// The audit paths of the leaves at `targets` in the tree of `size` leaves whose
    /// hashes `next` gives in order (each once): every node hashed once, memory for
    /// the paths and one node a level. Returns the root too.
    public static func paths(size: Int, targets: [Int], next: () throws(MsgError) -> Digest) throws(MsgError) -> (root: Digest, paths: [Int: [Digest]]) {
        let wanted = Array(Set(targets.filter { $0 >= 0 && $0 < size })).sorted()
        var paths: [Int: [Digest]] = [:]
        for t in wanted { paths[t] = [] }
        guard size > 0 else { return (try Digest.sha256([]), paths) }
        /// The targets in `lo..<hi`, as a range of `wanted`.
        func within(_ lo: Int, _ hi: Int) -> Range<Int> {
            func first(atLeast v: Int) -> Int {
                var a = 0, b = wanted.count
                while a < b {
                    let mid = (a + b) / 2
                    if wanted[mid] < v { a = mid + 1 } else { b = mid }
                }
                return a
            }
            return first(atLeast: lo)..<first(atLeast: hi)
        }
        func walk(_ lo: Int, _ hi: Int) throws(MsgError) -> Digest {
            if hi - lo == 1 { return try next() }
            var k = 1
            while k * 2 < hi - lo { k *= 2 }
            let left = try walk(lo, lo + k)
            let right = try walk(lo + k, hi)
            for i in within(lo, lo + k) { paths[wanted[i]]!.append(right) }
            for i in within(lo + k, hi) { paths[wanted[i]]!.append(left) }
            return try LedgerTree.node(left, right)
        }
        return (try walk(0, size), paths)
    }

    /// Whether `path` proves the leaf `hash` at `index` in the tree of `size` leaves
    /// with `root` (RFC 9162 2.1.3.2).
    public static func proves(_ path: [Digest], leaf hash: Digest, at index: Int, size: Int, root: Digest) throws(MsgError) -> Bool {
        guard index >= 0, index < size else { return false }
        var fn = index, sn = size - 1
        var r = hash
        for p in path {
            if sn == 0 { return false }
            if fn & 1 == 1 || fn == sn {
                r = try LedgerTree.node(p, r)
                if fn & 1 == 0 {
                    while fn & 1 == 0 && fn != 0 {
                        fn >>= 1
                        sn >>= 1
                    }
                }
            } else {
                r = try LedgerTree.node(r, p)
            }
            fn >>= 1
            sn >>= 1
        }
        return sn == 0 && r == root
    }
}
