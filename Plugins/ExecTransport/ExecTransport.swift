#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// The `exec:` transport, msg's pipe(8): runs a command once per message, without
/// a shell, and reads its exit status as sysexits (``ExitClassifier``).
///
/// `exec:/usr/sbin/sendmail -i -- bob@example.com?input=body&concurrency=4`:
/// the path is the command line, split into words by ``ShellWords`` (write `?`
/// as `%3F` and `%` as `%25` in it). Parameters:
/// - `input=record` (default): standard input is the record as a destination
///   receives it (``EncodedMessage/deliveredJSON``) and a newline; `input=body`:
///   the body alone; `input=mail`: the record as RFC 5322 mail (``MailText``, LF
///   line ends, for sendmail): a header that would break the mail's header block
///   makes the message `rejected` (dead, the reason named), never sent altered.
/// - `concurrency=N` (1 to 256, default 1): commands running at once; outcomes
///   are still reported in order.
/// - `grace=DURATION` (default 2s): between SIGTERM and SIGKILL at the deadline.
/// - `lookup=COMMAND`: asked by `recover` whether `MSG_ID` was delivered: exit 0
///   yes, 1 no, anything else unknown.
///
/// The environment is msg's, with `MSG_ID`, `MSG_TO`, `MSG_FROM`, `MSG_ATTEMPT`
/// (this attempt's number, from 1) and `MSG_HEADER_<NAME>` per header (the name
/// upper-cased, every character but a letter or digit made `_`; of two headers
/// that make one name the first wins) set for the message, and any inherited ones
/// of those names removed. A value the environment cannot hold whole (a NUL; too
/// large, E2BIG) makes the message `rejected`: it is never passed cut short. Standard output goes to
/// /dev/null; the first line of standard error is the error's message.
public final class ExecTransport: Transport {
    let argv: [String]
    let lookupArgv: [String]?
    let input: Input
    /// What a command reads on standard input.
    enum Input: String { case record, body, mail }
    let pool: ProcessPool
    private let baseEnvironment: [String]

    /// How long `lookup` gives its command.
    static let lookupDeadline: Int64 = 30_000

    /// Reads the URL. - Throws: `config` for a bad parameter or a command that
    /// cannot be found or run.
    public init(url: PluginURL) throws(MsgError) {
        guard url.authority == nil else {
            throw MsgError(.config, "exec: takes a command, not an address: write exec:/path/to/command ARGS, got '\(url.text)'")
        }
        argv = try ShellWords.command(url.path, what: "exec")
        try Self.checkRunnable(argv[0])
        let p = try URLParameters(url, "exec:", names: ["input", "concurrency", "grace", "lookup"])
        let input = try p.choice("input", ["record": Input.record, "body": .body, "mail": .mail]) ?? .record
        let concurrency = try p.int("concurrency", in: 1...256) ?? 1
        let grace = try p.duration("grace")?.milliseconds ?? 2000
        var lookup: [String]?
        if let value = p.text("lookup") {
            let words = try ShellWords.command(value, what: "exec: parameter lookup")
            try Self.checkRunnable(words[0])
            lookup = words
        }
        self.input = input
        self.lookupArgv = lookup
        self.pool = ProcessPool(concurrency: concurrency, grace: grace)
        self.baseEnvironment = Self.inheritedEnvironment()
        ProcessPool.becomeSubreaper()
    }

    /// Commands run at once in one call: a flush gives such a call one message per destination.
    public var parallelism: Int { pool.concurrency }

    public func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> [DeliveryOutcome] {
        // A value the environment cannot hold whole is refused, never cut short;
        // so is a record that does not make mail whole (input=mail).
        var refusals: [MsgError?] = []
        var jobs: [ProcessPool.Job] = []
        for record in records {
            do throws(MsgError) {
                let environment = try environment(for: record.message).get()
                jobs.append(ProcessPool.Job(argv: argv, environment: environment, input: try standardInput(record)))
                refusals.append(nil)
            } catch {
                refusals.append(error)
            }
        }
        var ends = pool.run(jobs, deadline: max(1, deadline.milliseconds)).makeIterator()
        return refusals.map { refusal in
            if let refusal { return .failed(refusal, retryAfter: nil) }
            return ExitClassifier.outcome(ends.next()!, command: argv[0], deadline: deadline)
        }
    }

    /// What the command reads for `record`. - Throws: `rejected` when it cannot be
    /// sent whole (``MailText/render(_:from:lineEnding:)``).
    func standardInput(_ record: EncodedMessage) throws(MsgError) -> [UInt8] {
        switch input {
        case .record: record.deliveredJSON + [10]
        case .body: Array(record.message.body.utf8)
        case .mail: try MailText.render(record.message)
        }
    }

    public func lookup(_ id: String) throws(MsgError) -> Bool? {
        try lookup([id])[0]
    }

    public func lookup(_ ids: [String]) throws(MsgError) -> [Bool?] {
        guard let lookupArgv else { return ids.map { _ in nil } }
        let jobs = ids.map { id in
            ProcessPool.Job(argv: lookupArgv, environment: baseEnvironment + ["MSG_ID=\(id)"], input: [])
        }
        return try pool.run(jobs, deadline: Self.lookupDeadline).map { end throws(MsgError) -> Bool? in
            switch end.how {
            case .exited(0): return true
            case .exited(1): return false
            case .notStarted(let e): throw ExitClassifier.notStarted(lookupArgv[0], errno: e)
            default: return nil
            }
        }
    }

    /// msg's environment and the message's `MSG_*` variables, or why the message
    /// cannot be passed (`rejected`): a NUL in a value, which C strings would cut
    /// short, so the command would deliver to a cut address. Two headers whose
    /// names make one variable name (`X-To`, `x_to`): the first in the record wins,
    /// and the others are left out of the environment (the record on standard
    /// input, `input=record`, has them all).
    func environment(for m: Message) -> Result<[String], MsgError> {
        var env = baseEnvironment
        env.reserveCapacity(env.count + 4 + m.headers.count)
        func add(_ name: String, _ value: String, _ what: String) -> MsgError? {
            if value.utf8.contains(0) {
                return MsgError(.rejected, "\(what) holds a NUL character, which cannot be passed in the environment (\(name)) whole; not sent rather than sent cut short")
            }
            env.append("\(name)=\(value)")
            return nil
        }
        env.append("MSG_ID=\(m.id)")
        if let error = add("MSG_TO", m.to, "the recipient (to)") { return .failure(error) }
        if let from = m.from, let error = add("MSG_FROM", from, "the sender (from)") { return .failure(error) }
        env.append("MSG_ATTEMPT=\(m.attempts + 1)")
        var names = Set<String>()
        for field in m.headers {
            let name = "MSG_HEADER_\(Self.variableName(field.key))"
            guard names.insert(name).inserted else { continue }
            if let error = add(name, field.value, "header \(Self.printable(field.key))") { return .failure(error) }
        }
        return .success(env)
    }

    /// A header name for a message: control characters shown as `?`.
    static func printable(_ name: String) -> String {
        String(String.UnicodeScalarView(name.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : $0 }))
    }

    /// A header name as a variable name: `Content-Type` is `CONTENT_TYPE`.
    static func variableName(_ key: String) -> String {
        String(String.UnicodeScalarView(key.unicodeScalars.map { s -> Unicode.Scalar in
            switch s {
            case "a"..."z": Unicode.Scalar(s.value - 32)!
            case "A"..."Z", "0"..."9": s
            default: "_"
            }
        }))
    }

    /// This process's environment without the names msg sets per message.
    static func inheritedEnvironment() -> [String] {
        var result: [String] = []
        var p = environ
        while let entry = p.pointee {
            let text = String(cString: entry)
            let name = text.prefix { $0 != "=" }
            if !["MSG_ID", "MSG_TO", "MSG_FROM", "MSG_ATTEMPT"].contains(name) && !name.hasPrefix("MSG_HEADER_") {
                result.append(text)
            }
            p += 1
        }
        return result
    }

    /// - Throws: `config` unless `command` names an executable file, directly or in PATH.
    static func checkRunnable(_ command: String) throws(MsgError) {
        if command.contains("/") {
            guard access(command, X_OK) == 0 else { throw SystemCalls.error(.config, "exec: cannot run \(command)") }
            return
        }
        let path = SystemCalls.environment("PATH") ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":", omittingEmptySubsequences: false) {
            let candidate = "\(directory.isEmpty ? "." : directory)/\(command)"
            var info = stat()
            if stat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFREG, access(candidate, X_OK) == 0 { return }
        }
        throw MsgError(.config, "exec: cannot run \(command): not found in PATH (\(path))")
    }
}

/// Registers the `exec:` scheme.
@_cdecl("msg_plugin_register")
public func msgPluginRegister(_ abi: UInt32, _ registrar: UnsafeMutableRawPointer) -> Int32 {
    PluginRegistrar.register(abiVersion: abi, registrar: registrar, plugin: "ExecTransport", version: MsgVersion.current) { r in
        r.transport(scheme: "exec") { url throws(MsgError) in try ExecTransport(url: url) }
    }
}
