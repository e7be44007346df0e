import ArgumentParser
import MsgEngine
import MsgKit
import MsgSupport

/// `--checkpoint-key` of `flush` and `retry`: a checkpoint of the ledger signed when
/// the run ends, on standard error or appended to a file (msg-ledger(1)).
struct CheckpointOptions: ParsableArguments {
    @Option(help: ArgumentHelp("When the run ends, sign a checkpoint of the store's ledger with this private key (msg-ledger(1)).", valueName: "key"))
    var checkpointKey: String?
    @Option(help: ArgumentHelp("Append the checkpoint's line to this file (default: standard error).", valueName: "file"))
    var checkpointTo: String?

    func validate() throws {
        if checkpointTo != nil && checkpointKey == nil { throw ValidationError("--checkpoint-to needs --checkpoint-key") }
    }

    /// The key, read before the run: a key that cannot be read stops it before it sends.
    func key() throws(MsgError) -> [UInt8]? {
        if let checkpointTo { try OutputPath.check(checkpointTo, option: "--checkpoint-to", code: .storeIO) }
        return try checkpointKey.map { (path) throws(MsgError) in try LedgerKeys.readPrivate(path) }
    }

    /// Signs and writes the checkpoint of the ledger as the run left it.
    func write(_ seed: [UInt8]?, _ session: Session) throws(MsgError) {
        guard let seed else { return }
        let checkpoint = try LedgerCheckpoints.sign(try ledgerStore(session), seed: seed)
        guard let file = checkpointTo else { return session.console.say("checkpoint \(checkpoint.line)") }
        try LedgerCheckpoints.append(checkpoint, to: file, option: "--checkpoint-to")
    }
}
