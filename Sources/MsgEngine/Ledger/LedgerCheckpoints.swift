#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

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
    public static func sign(_ store: any JournalStore, seed: [UInt8]) throws(MsgError) -> LedgerCheckpoint {
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
