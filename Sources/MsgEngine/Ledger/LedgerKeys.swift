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

/// Checkpoint files (msg-ledger(1)): lines of `msg ledger checkpoint`, read and
/// checked against a public key, and appended one whole line at a time.
public enum LedgerCheckpoints {
    /// The checkpoints in `files`, each signed by the key in `publicKeyFile`.
    /// - Throws: `badInput` naming the file and line of one that does not read, is
    ///   another key's or whose signature is not the key's.
    public static func read(_ files: [String], publicKeyFile: String) throws(MsgError) -> [LedgerCheckpoint] {
        let key = try LedgerKeys.readPublic(publicKeyFile)
        let keyID = try LedgerCheckpoint.keyID(of: key)
        var checkpoints: [LedgerCheckpoint] = []
        for file in files {
            let text = String(decoding: try SystemCalls.readFile(file, code: .badInput, what: "checkpoint file"), as: UTF8.self)
            for (i, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() where !line.isEmpty {
                let c = try LedgerCheckpoint(line: String(line), where: "\(file):\(i + 1)")
                guard c.keyID == keyID else {
                    throw MsgError(.badInput, "\(file):\(i + 1): the checkpoint is signed by key \(c.keyID), not by \(publicKeyFile) (key \(keyID))")
                }
                guard try c.isSigned(by: key) else {
                    throw MsgError(.badInput, "\(file):\(i + 1): the checkpoint's signature is not \(publicKeyFile)'s: it is forged or was changed")
                }
                checkpoints.append(c)
            }
        }
        return checkpoints
    }

    /// The ledger of `store` as it is now, signed with `seed`.
    public static func sign(_ store: any LedgerStore, seed: [UInt8]) throws(MsgError) -> LedgerCheckpoint {
        let (size, root) = try LedgerAudit(store: store).root()
        return try LedgerCheckpoint.sign(size: size, root: root, time: .now(), seed: seed)
    }

    /// Appends `checkpoint`'s line to `file` in one write, made durable when it is a
    /// regular file: lines appended by several runs never interleave, and one
    /// acknowledged by the exit status is on disk.
    public static func append(_ checkpoint: LedgerCheckpoint, to file: String, option: String) throws(MsgError) {
        let fd = try OutputPath.openAppending(file, option: option, mode: 0o644, code: .storeIO)
        defer { close(fd) }
        try SystemCalls.writeAll(fd, Array((checkpoint.line + "\n").utf8), code: .storeIO, what: "checkpoint file \(file)")
        var st = stat()
        if fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG {
            try SystemCalls.fsync(fd, code: .storeIO, what: "checkpoint file \(file)")
        }
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
