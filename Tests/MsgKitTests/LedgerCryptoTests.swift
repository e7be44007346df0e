import MsgKit
import MsgSupport
import Testing

/// SHA-256 and Ed25519 from libcrypto (``Digest``, ``Ed25519``), and the ledger's
/// tree, leaves and checkpoints on them.
@Suite struct LedgerCryptoTests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func sha256KnownVectors(input: String, digest: String) throws {
        #expect(try Digest.sha256(Array(input.utf8)).hex == digest)
        let parts = try Digest.sha256 { add in
            for c in input.utf8 { withUnsafeBytes(of: c) { add($0) } }
        }
        #expect(parts.hex == digest)
    }

    @Test func aMillionAsInUnevenPieces() throws {
        let h = try StreamingDigest()
        var left = 1_000_000
        var size = 1
        while left > 0 {
            let n = min(size, left)
            h.update([UInt8](repeating: UInt8(ascii: "a"), count: n))
            left -= n
            size = size * 3 % 1000 + 1
        }
        #expect(try h.finish().hex == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// RFC 8032 7.1, tests 1 and 2.
    @Test(arguments: [
        ("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
         "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
         "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
        ("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
         "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
         "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
    ])
    func ed25519KnownVectors(seed: String, publicKey: String, message: String, signature: String) throws {
        let seed = try #require(Hex.decode(seed)), msg = try #require(Hex.decode(message))
        #expect(Hex.encode(try Ed25519.publicKey(seed: seed)) == publicKey)
        let sig = try Ed25519.sign(msg, seed: seed)
        #expect(Hex.encode(sig) == signature)
        let pub = try #require(Hex.decode(publicKey))
        #expect(try Ed25519.isValid(sig, of: msg, publicKey: pub))
        var bent = sig
        bent[10] ^= 1
        #expect(try !Ed25519.isValid(bent, of: msg, publicKey: pub))
        #expect(try !Ed25519.isValid(sig, of: msg + [0], publicKey: pub))
    }

    /// RFC 6962 2.1's MTH, as written there: the reference the streaming tree must equal.
    private func mth(_ leaves: ArraySlice<Digest>) throws -> Digest {
        if leaves.isEmpty { return try Digest.sha256([]) }
        if leaves.count == 1 { return leaves.first! }
        var k = 1
        while k * 2 < leaves.count { k *= 2 }
        let start = leaves.startIndex
        return try LedgerTree.node(try mth(leaves[start..<(start + k)]), try mth(leaves[(start + k)...]))
    }

    @Test func theTreeIsRFC6962sAtEverySize() throws {
        var tree = LedgerTree()
        var leaves: [Digest] = []
        #expect(try tree.root() == (try Digest.sha256([])))
        for i in 0..<70 {
            let leaf = try LedgerLeaf.began(i).hash
            leaves.append(leaf)
            try tree.append(leaf)
            #expect(tree.size == i + 1)
            #expect(try tree.root() == (try mth(leaves[...])), "size \(i + 1)")
        }
        // The leaf and node prefixes tell a leaf from a node: two leaves' node is
        // not the hash of their bytes alone.
        let two = try LedgerTree.node(leaves[0], leaves[1])
        #expect(two != (try Digest.sha256(leaves[0].bytes + leaves[1].bytes)))
    }

    /// Any set of leaves of trees of 1 to 40 leaves is proven by the subtrees made
    /// in one pass beside their ways up: the root comes out again, and a changed
    /// leaf, a missing subtree or one given for a place a proven leaf is in does not.
    @Test func multiproofsProveTheirLeavesAndNothingElse() throws {
        for size in 1...40 {
            let leaves = try (0..<size).map { try LedgerLeaf.began($0).hash }
            let sets = [[0], [size - 1], Array(0..<size), Array(stride(from: 0, to: size, by: 3)), [size / 2, size - 1], []]
            for targets in sets {
                var i = 0
                let (root, nodes, hashes) = try LedgerProof.multiproof(size: size, targets: targets) { () throws(MsgError) -> Digest in
                    defer { i += 1 }
                    return leaves[i]
                }
                #expect(i == size, "each leaf read once")
                #expect(root == (try mth(leaves[...])), "size \(size)")
                #expect(Set(hashes.keys) == Set(targets) && targets.allSatisfy { hashes[$0] == leaves[$0] })
                #expect(try LedgerProof.root(size: size, leaves: hashes, nodes: nodes) == root, "size \(size), \(targets)")
                guard let t = targets.first else { continue }
                var bent = hashes
                bent[t] = try Digest.sha256([1])
                #expect(try LedgerProof.root(size: size, leaves: bent, nodes: nodes) != root, "a changed leaf, size \(size)")
                if !nodes.isEmpty {
                    #expect(try LedgerProof.root(size: size, leaves: hashes, nodes: Array(nodes.dropFirst())) == nil, "a missing subtree")
                }
                // A subtree given where a proven leaf lies is not taken for its leaves.
                var cover = nodes
                cover.append(LedgerProof.Node(lo: 0, hi: size, hash: root))
                #expect(try LedgerProof.root(size: size, leaves: bent, nodes: cover) != root, "the whole tree given, size \(size)")
            }
        }
    }

    @Test func leavesAreReadAsWrittenAndNothingLess() throws {
        let leaves = [LedgerLeaf(kind: .state, n: 3, id: "01a2-é", hash: try Digest.sha256([1])),
                      LedgerLeaf(kind: .entry, n: 300, id: "", hash: try Digest.sha256([2])),
                      try LedgerLeaf.removed("x"), try LedgerLeaf.began(1 << 40)]
        var bytes: [UInt8] = []
        for l in leaves { l.write(to: &bytes) }
        var read: [LedgerLeaf] = []
        try bytes.withUnsafeBytes { b in
            var at = 0
            while at < b.count {
                let (leaf, end) = try #require(LedgerLeaf.read(b, at: at))
                read.append(leaf)
                at = end
            }
            for cut in 1..<b.count {
                // A leaf cut anywhere does not read as a leaf.
                let part = UnsafeRawBufferPointer(rebasing: b[0..<cut])
                var at = 0
                var whole = 0
                while let (_, end) = LedgerLeaf.read(part, at: at) {
                    whole += 1
                    at = end
                }
                #expect(at <= cut && whole < leaves.count)
            }
        }
        #expect(read == leaves)
        #expect(try leaves[2].expectedHash() == leaves[2].hash)
        var forged = leaves[2]
        forged.id = "y"
        #expect(try forged.expectedHash() != forged.hash)
    }

    @Test func aCheckpointIsSignedReadAndRefusedWhenChanged() throws {
        let seed = try Ed25519.newSeed(), other = try Ed25519.newSeed()
        let pub = try Ed25519.publicKey(seed: seed)
        let c = try LedgerCheckpoint.sign(size: 42, root: try Digest.sha256([7]), time: Timestamp(milliseconds: 1_800_000_000_123), seed: seed)
        let read = try LedgerCheckpoint(line: c.line, where: "test")
        #expect(read == c)
        #expect(try read.isSigned(by: pub))
        #expect(try !read.isSigned(by: try Ed25519.publicKey(seed: other)))
        var grown = read
        grown.size = 43
        #expect(try !grown.isSigned(by: pub))
        #expect(c.keyID == (try LedgerCheckpoint.keyID(of: pub)))
        #expect(throws: MsgError.self) { try LedgerCheckpoint(line: #"{"ledger":"msg-ledger 1","size":-1}"#, where: "x") }
        #expect(throws: MsgError.self) { try LedgerCheckpoint(line: "not json", where: "x") }
    }
}

/// ``Hex``: every byte both ways, as a string and into bytes; a digit of either
/// case; an odd length or a character that is no digit refused.
@Suite struct HexTests {
    @Test func everyByteRoundTrips() {
        let all = (0...255).map { UInt8($0) }
        var written: [UInt8] = [0x7B]
        all.withUnsafeBufferPointer { Hex.write($0, to: &written) }
        #expect(written.first == 0x7B && Array(written.dropFirst()) == Array(Hex.encode(all).utf8), "appended after what was there")
        #expect(Hex.encode([0x00, 0x0F, 0xA5, 0xFF]) == "000fa5ff")
        #expect(Hex.decode(Hex.encode(all)) == all)
        let bytes = Array(written.dropFirst())
        #expect(bytes.withUnsafeBufferPointer { Hex.decode($0) } == all)
        #expect(Hex.decode("A5fF") == [0xA5, 0xFF])
    }

    @Test(arguments: ["abc", "0g", "zz", " 0", "0\u{00e9}", "\u{00e9}"]) func notHexIsRefused(text: String) {
        #expect(Hex.decode(text) == nil)
        #expect(Array(text.utf8).withUnsafeBufferPointer { Hex.decode($0) } == nil)
    }

    @Test func nothingIsNothing() {
        #expect(Hex.decode("") == [])
        #expect(Hex.encode([]) == "")
    }
}
