import MsgKit

/// A signed tree head of a store's ledger (msg-ledger(1)): its size, root and time,
/// signed with Ed25519, as one JSON line to keep elsewhere.
public struct LedgerCheckpoint: Sendable, Equatable {
    public var size: Int
    public var root: Digest
    public var time: Timestamp
    /// The first 8 bytes of SHA-256 of the public key, in hex.
    public var keyID: String
    public var signature: [UInt8]

    /// What the signature covers: four lines of text.
    public var signed: [UInt8] {
        Array("msg-ledger checkpoint 1\nsize \(size)\nroot \(root.hex)\ntime \(time.description)\n".utf8)
    }

    /// A checkpoint of `size` leaves with `root` at `time`, signed by `seed`.
    public static func sign(size: Int, root: Digest, time: Timestamp, seed: [UInt8]) throws(MsgError) -> LedgerCheckpoint {
        let pub = try Ed25519.publicKey(seed: seed)
        var c = LedgerCheckpoint(size: size, root: root, time: time, keyID: try keyID(of: pub), signature: [])
        c.signature = try Ed25519.sign(c.signed, seed: seed)
        return c
    }

    /// Which key signed: the first 8 bytes of SHA-256 of the public key, in hex.
    public static func keyID(of publicKey: [UInt8]) throws(MsgError) -> String {
        String(try Digest.sha256(publicKey).hex.prefix(16))
    }

    /// Whether `publicKey` signed it.
    public func isSigned(by publicKey: [UInt8]) throws(MsgError) -> Bool {
        try Ed25519.isValid(signature, of: signed, publicKey: publicKey)
    }

    /// Its line: `{"ledger":"msg-ledger 1","size":…,"root":…,"time":…,"key":…,"signature":…}`.
    public var line: String {
        var w = JSONWriter()
        w.value(.object([
            .init("ledger", .string("msg-ledger 1")),
            .init("size", .number(String(size))),
            .init("root", .string(root.hex)),
            .init("time", .string(time.description)),
            .init("key", .string(keyID)),
            .init("signature", .string(Base64.encode(signature))),
        ]))
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// Reads a checkpoint's line; `where` names it in the error.
    /// - Throws: `badInput` naming what is wrong.
    public init(line: String, where place: String) throws(MsgError) {
        func bad(_ why: String) -> MsgError { MsgError(.badInput, "\(place): not a msg ledger checkpoint: \(why)") }
        let value: JSONValue
        do throws(JSONParser.Failure) {
            value = try JSONParser.parse(line)
        } catch {
            throw bad("\(error)")
        }
        guard case .object = value else { throw bad("not a JSON object") }
        let fields = value
        guard case .string("msg-ledger 1")? = fields["ledger"] else { throw bad("\"ledger\" is not \"msg-ledger 1\"") }
        guard case .number(let text)? = fields["size"], let n = Int(text), n >= 0 else { throw bad("\"size\" is not a count") }
        guard case .string(let rootHex)? = fields["root"], let root = Digest(hex: rootHex) else { throw bad("\"root\" is not 64 hex digits") }
        guard case .string(let timeText)? = fields["time"], let time = Timestamp(rfc3339: timeText) else { throw bad("\"time\" is not a time") }
        guard case .string(let key)? = fields["key"] else { throw bad("\"key\" is missing") }
        guard case .string(let sigText)? = fields["signature"], let sig = Base64.decode(sigText), sig.count == 64 else {
            throw bad("\"signature\" is not 64 bytes of base64")
        }
        self.init(size: n, root: root, time: time, keyID: key, signature: sig)
    }

    public init(size: Int, root: Digest, time: Timestamp, keyID: String, signature: [UInt8]) {
        self.size = size
        self.root = root
        self.time = time
        self.keyID = keyID
        self.signature = signature
    }
}
