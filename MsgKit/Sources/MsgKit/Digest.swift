import CCrypto

/// A SHA-256 digest (FIPS 180-4): the hash of a ledger's leaf (``LedgerLeaf``), its
/// tree and an export's manifest: one copy, in libMsgKit.so, with the leaf's format
/// under the plugin ABI.
public struct Digest: Sendable, Hashable, Comparable {
    /// The 32 bytes, big-endian in four words: held inline, as a ledger check
    /// makes millions of them.
    private let w0, w1, w2, w3: UInt64

    /// The 32 bytes.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(32)
        for w in [w0, w1, w2, w3] {
            for i in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: w >> UInt64(i))) }
        }
        return out
    }

    /// - Precondition: 32 bytes.
    public init(bytes: some Collection<UInt8>) {
        precondition(bytes.count == 32, "a SHA-256 digest has 32 bytes")
        var w: [UInt64] = [0, 0, 0, 0]
        for (i, b) in bytes.enumerated() { w[i / 8] = w[i / 8] << 8 | UInt64(b) }
        (w0, w1, w2, w3) = (w[0], w[1], w[2], w[3])
    }

    /// From 32 bytes at `p`.
    public init(_ p: UnsafeRawPointer) {
        func word(_ at: Int) -> UInt64 { UInt64(bigEndian: p.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
        (w0, w1, w2, w3) = (word(0), word(8), word(16), word(24))
    }

    /// Appends the 32 bytes.
    public func write(to out: inout [UInt8]) {
        var words = (w0.bigEndian, w1.bigEndian, w2.bigEndian, w3.bigEndian)
        withUnsafeBytes(of: &words) { out.append(contentsOf: $0) }
    }

    /// Lower-case hex.
    public var hex: String { Hex.encode(bytes) }

    /// From 64 hex digits; nil otherwise.
    public init?(hex: String) {
        guard let b = Hex.decode(hex), b.count == 32 else { return nil }
        self.init(bytes: b)
    }

    public static func < (a: Digest, b: Digest) -> Bool { (a.w0, a.w1, a.w2, a.w3) < (b.w0, b.w1, b.w2, b.w3) }
}

/// SHA-256 from the system's libcrypto, which is opened at the first use
/// (``CCrypto``): the export manifest, the ledger's leaves and tree.
extension Digest {
    /// The digest of `data`.
    /// - Throws: `unavailable` when libcrypto cannot be loaded.
    public static func sha256(_ data: UnsafeRawBufferPointer) throws(MsgError) -> Digest {
        var out = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        let rc = withUnsafeMutableBytes(of: &out) { msg_sha256(data.baseAddress, data.count, $0.baseAddress) }
        guard rc == 0 else { throw Self.unavailable() }
        return withUnsafeBytes(of: &out) { Digest($0.baseAddress!) }
    }

    /// The digest of `data`.
    public static func sha256(_ data: [UInt8]) throws(MsgError) -> Digest {
        var out = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        let rc = withUnsafeMutableBytes(of: &out) { o in data.withUnsafeBufferPointer { msg_sha256($0.baseAddress, $0.count, o.baseAddress) } }
        guard rc == 0 else { throw Self.unavailable() }
        return withUnsafeBytes(of: &out) { Digest($0.baseAddress!) }
    }

    /// The digest of the parts `body` gives, one after another, as one text: none is
    /// copied. Not nested on a thread (it uses the thread's own context).
    public static func sha256(parts body: ((UnsafeRawBufferPointer) -> Void) -> Void) throws(MsgError) -> Digest {
        guard msg_sha256_begin() == 0 else { throw Self.unavailable() }
        var failed = false
        body { part in
            if part.count > 0, msg_sha256_add(part.baseAddress, part.count) != 0 { failed = true }
        }
        var out = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        let rc = withUnsafeMutableBytes(of: &out) { msg_sha256_end($0.baseAddress) }
        guard rc == 0, !failed else { throw Self.unavailable() }
        return withUnsafeBytes(of: &out) { Digest($0.baseAddress!) }
    }

    /// libcrypto could not be loaded or failed.
    static func unavailable() -> MsgError {
        MsgError(.unavailable, String(cString: msg_crypto_error()))
    }
}

/// A SHA-256 over bytes given in parts (a file as it is written).
public final class StreamingDigest {
    private var ctx: UnsafeMutableRawPointer?

    /// - Throws: `unavailable` when libcrypto cannot be loaded.
    public init() throws(MsgError) {
        guard let ctx = msg_sha256_new() else { throw Digest.unavailable() }
        self.ctx = ctx
    }

    deinit { msg_sha256_free(ctx) }

    /// Adds bytes.
    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let ctx, bytes.count > 0 else { return }
        _ = msg_sha256_update(ctx, bytes.baseAddress, bytes.count)
    }

    /// Adds bytes.
    public func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The digest of everything added; the object is spent.
    public func finish() throws(MsgError) -> Digest {
        guard let c = ctx else { throw MsgError(.config, "a SHA-256 was finished twice") }
        ctx = nil
        var out = [UInt8](repeating: 0, count: 32)
        let rc = out.withUnsafeMutableBufferPointer { msg_sha256_final(c, $0.baseAddress) }
        guard rc == 0 else { throw Digest.unavailable() }
        return Digest(bytes: out)
    }
}
