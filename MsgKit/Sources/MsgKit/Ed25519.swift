import CCrypto

/// Ed25519 signatures (RFC 8032) from the system's libcrypto: the ledger's signed
/// checkpoints.
public enum Ed25519 {
    /// A new 32-byte private seed from the system's generator.
    public static func newSeed() throws(MsgError) -> [UInt8] {
        var seed = [UInt8](repeating: 0, count: 32)
        let rc = seed.withUnsafeMutableBufferPointer { msg_random($0.baseAddress, 32) }
        guard rc == 0 else { throw Digest.unavailable() }
        return seed
    }

    /// The 32-byte public key of `seed`.
    public static func publicKey(seed: [UInt8]) throws(MsgError) -> [UInt8] {
        guard seed.count == 32 else { throw MsgError(.config, "an Ed25519 private key has 32 bytes, not \(seed.count)") }
        var pub = [UInt8](repeating: 0, count: 32)
        let rc = pub.withUnsafeMutableBufferPointer { p in seed.withUnsafeBufferPointer { msg_ed25519_public($0.baseAddress, p.baseAddress) } }
        guard rc == 0 else { throw Digest.unavailable() }
        return pub
    }

    /// The 64-byte signature of `message` by `seed`.
    public static func sign(_ message: [UInt8], seed: [UInt8]) throws(MsgError) -> [UInt8] {
        guard seed.count == 32 else { throw MsgError(.config, "an Ed25519 private key has 32 bytes, not \(seed.count)") }
        var sig = [UInt8](repeating: 0, count: 64)
        let rc = sig.withUnsafeMutableBufferPointer { s in
            seed.withUnsafeBufferPointer { k in message.withUnsafeBufferPointer { msg_ed25519_sign(k.baseAddress, $0.baseAddress, $0.count, s.baseAddress) } }
        }
        guard rc == 0 else { throw Digest.unavailable() }
        return sig
    }

    /// Whether `signature` is `publicKey`'s over `message`.
    /// - Throws: `unavailable` when libcrypto cannot be loaded.
    public static func isValid(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) throws(MsgError) -> Bool {
        guard signature.count == 64, publicKey.count == 32 else { return false }
        let rc = publicKey.withUnsafeBufferPointer { k in
            signature.withUnsafeBufferPointer { s in message.withUnsafeBufferPointer { msg_ed25519_verify(k.baseAddress, $0.baseAddress, $0.count, s.baseAddress) } }
        }
        if rc < 0 { throw Digest.unavailable() }
        return rc == 0
    }
}
