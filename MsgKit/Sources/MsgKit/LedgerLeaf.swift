/// One leaf of a store's ledger (msg-ledger(1), docs/DESIGN.md 10): what one change
/// did to one message, kept as its hash in the tree.
///
/// The hash is RFC 6962's (2.1): SHA-256 of a 0 byte and the leaf's bytes, which are
/// `kind` (1 byte), `n` (8, big-endian), the message id's length (4, big-endian)
/// and UTF-8 bytes, then what the change holds, each part after its length (4):
/// - `state`: the content (the text from `{` through `headers` as msg writes it, the
///   fields msg does not know, then `created_at`, `not_before` and `expires_at` in ms,
///   8 bytes each, -1 when unset), then the JSON array of history entries `0..<n`
///   (``stateHash(_:_:entries:)``);
/// - `entry`: history entry `n`;
/// - `removed`, `began`: nothing.
/// So a leaf fixes which message it is about and what it said of it; the check
/// computes it again from the record as it is (``LedgerAudit``).
///
/// A store keeps each leaf as `kind`, `n` (a varint), the id (its length as a
/// varint; none for `entry`, whose message names it) and the hash: the numbers and
/// id are what the check is told to compute from, and the hash it must get. Format
/// 1 keeps the id as its text; format 2 (plugin ABI 9.3) keeps a UUID as its 16
/// bytes, 20 fewer in each `state` and `removed` leaf, in the kind byte's high bits.
public struct LedgerLeaf: Sendable, Equatable {
    /// The newest leaf format this MsgKit writes and reads (it reads format 1 too):
    /// a host meets leaves of a newer format only when a store built against a newer
    /// MsgKit wrote them, and says so instead of calling them changed (plugin ABI
    /// 8.0, which put the leaf here; format 2 came with 9.3).
    public static let formatVersion: UInt8 = 2

    public enum Kind: UInt8, Sendable {
        /// The message's whole state: its content and its first `n` history entries.
        /// Written when it is stored, when its content changes (`queue edit`), when
        /// its history goes back (a claim put back), and at the first change of a
        /// message stored before the ledger.
        case state = 1
        /// History entry `n` appended.
        case entry = 2
        /// The message left the store (`queue rm`, `queue purge`).
        case removed = 3
        /// The ledger began (or began again, in a store carried out of a damaged
        /// file) with `n` messages stored before it, which it does not cover until
        /// their next change; no id.
        case began = 4
    }

    public var kind: Kind
    /// The format it is kept in (``formatVersion`` for every leaf this msg makes
    /// that names a message by a UUID, else 1), in the high four bits of the kind
    /// byte: format 1 leaves keep their kind byte as it always was.
    public var version: UInt8
    public var n: Int
    /// The message's id as kept (empty for an `entry`: its message names it).
    public var id: String
    public var hash: Digest

    public init(kind: Kind, version: UInt8 = LedgerLeaf.formatVersion, n: Int, id: String, hash: Digest) {
        self.kind = kind
        // Format 2 keeps a UUID as its bytes: a leaf that names no message by one is
        // kept, and read back, in format 1.
        self.version = version == 2 && (kind == .entry || !UUIDText.isCanonical(id)) ? 1 : version
        self.n = n
        self.id = id
        self.hash = hash
    }

    /// Appends the leaf as a store keeps it: in format 2 when it names a message
    /// whose id is a UUID in canonical form (every id msg makes or takes), the id
    /// kept as its 16 bytes, else in format 1, the id kept as its text. The hash is
    /// the same in both: the format is how a leaf is kept, not what it proves.
    public func write(to out: inout [UInt8]) {
        var id = kind == .entry ? "" : id
        id.withUTF8 { u in
            if version == 2, let uuid = UUIDText.bytes(u) {
                out.append(kindByte)
                Self.varint(UInt64(n), to: &out)
                out.append(16)
                withUnsafeBytes(of: uuid) { out.append(contentsOf: $0) }
            } else {
                // Its text: format 1 (an id changed after the leaf was made included),
                // or the format it was read in.
                out.append(version == 2 ? kind.rawValue : kindByte)
                Self.varint(UInt64(n), to: &out)
                Self.varint(UInt64(u.count), to: &out)
                out.append(contentsOf: u)
            }
        }
        hash.write(to: &out)
    }

    /// The leaf kept at `offset` in `bytes`, and the offset after it; nil when they
    /// are not a whole leaf.
    public static func read(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> (leaf: LedgerLeaf, end: Int)? {
        var at = offset
        func varint() -> UInt64? {
            var v: UInt64 = 0
            var shift: UInt64 = 0
            while at < bytes.count, shift < 64 {
                let b = bytes[at]
                at += 1
                v |= UInt64(b & 0x7f) << shift
                if b < 0x80 { return v }
                shift += 7
            }
            return nil
        }
        guard at < bytes.count, (1...16).contains(bytes[at] >> 4 + 1), let kind = Kind(rawValue: bytes[at] & 0x0f) else { return nil }
        let version = bytes[at] >> 4 + 1
        at += 1
        guard let n = varint(), n < 1 << 62, let idLength = varint(), idLength <= bytes.count - at else { return nil }
        let idBytes = UnsafeRawBufferPointer(rebasing: bytes[at..<(at + Int(idLength))])
        let id: String
        if version == 2 {
            // Format 2: a UUID's 16 bytes.
            guard idLength == 16 else { return nil }
            id = UUIDText.format(idBytes)
        } else {
            id = String(decoding: idBytes, as: UTF8.self)
        }
        at += Int(idLength)
        guard bytes.count - at >= 32 else { return nil }
        let hash = Digest(bytes.baseAddress! + at)
        return (LedgerLeaf(kind: kind, version: version, n: Int(n), id: id, hash: hash), at + 32)
    }

    /// The first byte as a leaf of format `version` is kept: the kind, and the
    /// format above format 1 (the hash takes the kind alone).
    public var kindByte: UInt8 { kind.rawValue | (version &- 1) << 4 }

    /// Whether this MsgKit knows the format it was made in.
    public var isKnownFormat: Bool { version >= 1 && version <= Self.formatVersion }

    public static func varint(_ v: UInt64, to out: inout [UInt8]) {
        var v = v
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }
}
