import MsgEngine
import MsgKit
import MsgSupport

/// The store, as one that keeps a ledger.
func ledgerStore(_ session: Session) throws(MsgError) -> any LedgerStore {
    let store = try session.store(.read)
    guard let ledger = store as? any LedgerStore else {
        throw MsgError(.config, "store \(session.settings.store) keeps no ledger (the sqlite: and postgres: stores do)")
    }
    return ledger
}

/// The key files of `msg ledger keygen`: one line each, `ed25519-private HEX` and `ed25519 HEX`.
enum LedgerKeys {
    static func privateLine(_ seed: [UInt8]) -> String { "ed25519-private \(Hex.encode(seed))\n" }
    static func publicLine(_ key: [UInt8]) -> String { "ed25519 \(Hex.encode(key))\n" }

    static func readPrivate(_ path: String) throws(MsgError) -> [UInt8] {
        try parse(try SystemCalls.readPrivateFile(path, what: "ledger key"), prefix: "ed25519-private", path: path, what: "a private key from msg ledger keygen")
    }

    static func readPublic(_ path: String) throws(MsgError) -> [UInt8] {
        try parse(try SystemCalls.readFile(path, code: .config, what: "public key"), prefix: "ed25519", path: path, what: "a public key (FILE.pub of msg ledger keygen)")
    }

    private static func parse(_ bytes: [UInt8], prefix: String, path: String, what: String) throws(MsgError) -> [UInt8] {
        let words = String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard words.count == 2, words[0] == prefix, let key = Hex.decode(String(words[1])), key.count == 32 else {
            throw MsgError(.config, "\(path) is not \(what)")
        }
        return key
    }
}
