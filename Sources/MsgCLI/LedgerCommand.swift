import ArgumentParser
import MsgEngine
import MsgKit
import MsgSupport

/// `msg ledger`: the store's tamper-evident log of every message and change
/// (msg-ledger(1)): keys, signed checkpoints, and the check of both.
struct LedgerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger",
        abstract: "Sign and check the store's ledger: every message and every change of it, in an append-only Merkle log.",
        subcommands: [LedgerKeygenCommand.self, LedgerCheckpointCommand.self, LedgerVerifyCommand.self]
    )
}

/// `msg ledger keygen --key FILE`: an Ed25519 key pair, FILE (owner-only) and FILE.pub.
struct LedgerKeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Make an Ed25519 key pair for checkpoints: FILE (private, owner-only) and FILE.pub.",
        discussion: "Refuses to overwrite an existing key. Keep FILE where the store's writers cannot read it."
    )
    @Option(help: ArgumentHelp("The private key's file; the public key goes to FILE.pub.", valueName: "file")) var key: String

    func run() throws {
        for path in [key, key + ".pub"] where SystemCalls.exists(path) {
            throw MsgError(.usage, "\(path) exists; msg ledger keygen does not overwrite a key")
        }
        let seed = try Ed25519.newSeed()
        let pub = try Ed25519.publicKey(seed: seed)
        try OutputFile.write(key, Array(LedgerKeys.privateLine(seed).utf8), option: "--key", mode: 0o600, streams: false, code: .storeIO)
        try OutputFile.write(key + ".pub", Array(LedgerKeys.publicLine(pub).utf8), option: "--key", mode: 0o644, streams: false, code: .storeIO)
        let out = ByteOutput()
        out.write("key \(try LedgerCheckpoint.keyID(of: pub)): \(key) and \(key).pub\n")
        try out.flush()
    }
}

/// `msg ledger checkpoint --key FILE`: the ledger's size and root, signed, as one line.
struct LedgerCheckpointCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkpoint",
        abstract: "Print a signed checkpoint of the ledger (its size, root and time) as one JSON line, to keep elsewhere.",
        discussion: """
        Keep the lines where the store's writers cannot change them (a git repository, \
        a mail, a transparency log): msg ledger verify --checkpoint then proves the \
        ledger still begins with what each of them signed.
        """
    )
    @OptionGroup var global: GlobalOptions
    @Option(help: ArgumentHelp("The private key (from msg ledger keygen).", valueName: "file")) var key: String

    func run(_ session: Session) throws {
        let seed = try LedgerKeys.readPrivate(key)
        let checkpoint = try LedgerCheckpoints.sign(try ledgerStore(session), seed: seed)
        let out = session.console.buffer()
        out.write(checkpoint.line + "\n")
        try out.flush()
    }
}

/// `msg ledger verify`: the ledger against the records, and against checkpoints.
struct LedgerVerifyCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check the ledger against every message in the store, and against signed checkpoints.",
        discussion: """
        Exits 0 and prints the ledger's size and root when every message and change \
        is as the ledger holds it and the ledger begins with each checkpoint; \
        otherwise names, first, the message or change that differs, on stderr, \
        and exits 65.
        """
    )
    @OptionGroup var global: GlobalOptions
    @Option(help: ArgumentHelp("Checkpoints (lines of msg ledger checkpoint) the ledger must begin with; needs --pubkey.", valueName: "file"))
    var checkpoint: [String] = []
    @Option(help: ArgumentHelp("The public key the checkpoints are signed with (FILE.pub of msg ledger keygen).", valueName: "file"))
    var pubkey: String?
    @Option(help: ArgumentHelp("Check an export (msg export --proof) by FILE.proof, with no store: against the proof's checkpoint, signed by --pubkey (and one of --checkpoint's, when given).",
                               valueName: "file"))
    var export: String?

    func validate() throws {
        if !checkpoint.isEmpty && pubkey == nil { throw ValidationError("--checkpoint needs --pubkey, the key it is signed with") }
        if export != nil && pubkey == nil { throw ValidationError("--export needs --pubkey, the key its proof's checkpoint is signed with") }
        if checkpoint.isEmpty && export == nil && pubkey != nil { throw ValidationError("--pubkey is for --checkpoint or --export") }
    }

    func run(_ session: Session) throws {
        let checkpoints = try pubkey.map { (key) throws(MsgError) in try LedgerCheckpoints.read(checkpoint, publicKeyFile: key) } ?? []
        if let export, let pubkey {
            let report = try LedgerExportProof.check(export: export, proof: export + ".proof", checkpoints: checkpoint.isEmpty ? nil : checkpoints,
                                                     publicKey: try LedgerKeys.readPublic(pubkey))
            for line in LedgerFinding.lines(report.findings) { session.console.say(line) }
            guard report.isWhole else { throw LedgerFinding.failure(report.findings, what: "the export is not what the signed ledger held") }
            var w = JSONWriter()
            w.value(.object([
                .init("export", .string(export)), .init("messages", .number(String(report.messages))),
                .init("leaves", .number(String(report.leaves))), .init("size", .number(String(report.checkpoint.size))),
                .init("root", .string(report.checkpoint.root.hex)),
            ]))
            let out = session.console.buffer()
            out.write(String(decoding: w.bytes, as: UTF8.self) + "\n")
            try out.flush()
            return
        }
        let progress = session.console.progress("checked")
        let report = try LedgerAudit(store: try ledgerStore(session)).verify(checkpoints: checkpoints, progress: progress)
        progress.finish()
        for line in LedgerFinding.lines(report.findings) { session.console.say(line) }
        guard report.isWhole else { throw LedgerFinding.failure(report.findings, what: "the store is not what its ledger holds") }
        let out = session.console.buffer()
        out.write(report.line + "\n")
        try out.flush()
    }
}

/// The store, as one that keeps a ledger.
func ledgerStore(_ session: Session) throws(MsgError) -> any JournalStore {
    let store = try session.store(.read)
    guard let ledger = store.capabilities.journal else {
        throw MsgError(.config, "store \(session.settings.store) keeps no ledger (the sqlite:, json: and postgres: stores do)")
    }
    return ledger
}
