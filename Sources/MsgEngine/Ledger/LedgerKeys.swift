#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// The key files of `msg ledger keygen`: one line each, `ed25519-private HEX` and `ed25519 HEX`.
public enum LedgerKeys {
    public static func privateLine(_ seed: [UInt8]) -> String { "ed25519-private \(Hex.encode(seed))\n" }
    public static func publicLine(_ key: [UInt8]) -> String { "ed25519 \(Hex.encode(key))\n" }

    public static func readPrivate(_ path: String) throws(MsgError) -> [UInt8] {
        try parse(try SystemCalls.readPrivateFile(path, what: "ledger key"), prefix: "ed25519-private", path: path, what: "a private key from msg ledger keygen")
    }

    public static func readPublic(_ path: String) throws(MsgError) -> [UInt8] {
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

extension LedgerFinding {
    /// The lines that say `findings`: errors first, at most `limit`, then how many more.
    public static func lines(_ findings: [LedgerFinding], limit: Int = 20) -> [String] {
        let sorted = findings.enumerated().sorted { ($0.element.severity, $0.offset) < ($1.element.severity, $1.offset) }.map(\.element)
        var lines = sorted.prefix(limit).map(\.line)
        if sorted.count > limit { lines.append("ledger: and \(sorted.count - limit) more") }
        return lines
    }

    /// The error a check that found `findings` ends with: `badInput` (65), counting them.
    public static func failure(_ findings: [LedgerFinding], what: String) -> MsgError {
        let errors = findings.filter { $0.severity == .error }.count
        return MsgError(.badInput, "ledger: \(what) (\(errors) error\(errors == 1 ? "" : "s"))")
    }
}
