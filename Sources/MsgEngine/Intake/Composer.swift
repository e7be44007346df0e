import MsgKit
import MsgSupport

/// `compose`: one record from flags, or drafts from stdin completed (and stored
/// with `--enqueue`).
public struct Composer {
    private let drafts: Drafts
    private let store: (any Store)?
    private let onError: OnError
    private let console: Console
    private let input: Int32
    private let writer: NDJSONWriter
    private let reporter: Reporter

    /// A composer completing with `drafts`, storing into `store` when given, reading
    /// drafts and bodies from the console's input, writing records to its output and
    /// saying what is wrong with a draft to its reporter.
    public init(drafts: Drafts, store: (any Store)?, onError: OnError, console: Console) {
        self.drafts = drafts
        self.store = store
        self.onError = onError
        self.console = console
        self.input = console.input
        self.writer = console.writer()
        self.reporter = console.reporter
    }

    /// With `body`, makes one record (`-` reads the body from stdin); otherwise
    /// completes the drafts on stdin.
    /// - Returns: the exit status (65 when a draft was bad).
    /// - Throws: `usage`, `storeIO`…
    public func run(to: String?, body: String?, progress: Progress? = nil) throws(MsgError) -> Int32 {
        if let body, let to {
            let text = body == "-" ? try readBody() : body
            let r = try RecordPipeline.encode(try drafts.make(to: to, body: text), store: store != nil).get()
            if let store, let stored = try store.add([r]).first, !stored.inserted {
                try writer.write(stored.message)
            } else {
                try writer.writeRaw(r.json)
            }
            return 0
        }
        let drafts = self.drafts
        let pipeline = RecordPipeline(decode: { (line) throws(MsgError) in try drafts.complete(JSONParser.parseInput(line)) },
                                      store: store, writer: writer, onError: onError, reporter: reporter)
        var reader = NDJSONReader(fd: input)
        return try pipeline.run(&reader, progress: progress).exitCode
    }

    /// The input as the body, without one trailing newline (as `$(…)` would).
    func readBody() throws(MsgError) -> String {
        var bytes = try SystemCalls.readToEnd(input, code: .badInput, what: "standard input")
        if bytes.last == 0x0A { bytes.removeLast() }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw MsgError(.badInput, "the body on standard input is not valid UTF-8")
        }
        return text
    }
}
