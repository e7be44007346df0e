import CCrypto
import MsgKit

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

