import ArgumentParser
import MsgEngine
import MsgKit

/// The messages a command acts on: ids as arguments, else read from stdin when it
/// is not a terminal (records, `{"id":…}` objects or bare ids, one per line).
struct TargetOptions: ParsableArguments {
    @Argument(help: "Message ids; without them, ids are read from stdin when it is not a terminal.", completion: Completion.ids)
    var ids: [String] = []

    func validate() throws {
        for id in ids where !UUIDText.isCanonical(id) {
            throw ValidationError("'\(id)' is not a message id (a lower-case UUID)")
        }
    }

    /// The ids given, nil for "all", and the number of bad stdin lines.
    /// `required`: stdin must name some (for commands that never act on all).
    func resolve(required: Bool = false) throws(MsgError) -> (ids: [String]?, badLines: Int) {
        if !ids.isEmpty { return (ids, 0) }
        let invocation = Invocation.current
        if invocation.inputIsTerminal {
            if required { throw MsgError(.usage, "name the messages: give ids, or pipe records or ids on stdin") }
            return (nil, 0)
        }
        var reader = NDJSONReader(fd: invocation.input)
        let targets = try TargetReader.read(&reader, reporter: invocation.reporter)
        if targets.ids.isEmpty && targets.badLines == 0 && !required { return (nil, 0) }
        return (targets.ids, targets.badLines)
    }
}

/// The retry policy and deadline of `flush` and `retry` (docs/DESIGN.md 6).
struct PolicyOptions: ParsableArguments {
    @Option(name: .customLong("max-attempts"), help: "Counted attempts before a message is dead.") var maxAttempts = 3
    @Option(name: .customLong("backoff-base"), help: "The delay after the first failure (default: 1s).", transform: ArgumentValue.duration)
    var backoffBase = MsgDuration.seconds(1)
    @Option(name: .customLong("backoff-cap"), help: "The longest delay (default: 30s).", transform: ArgumentValue.duration)
    var backoffCap = MsgDuration.seconds(30)
    @Option(help: "Extra random delay, as a fraction of the delay (0.1 = up to 10%).") var jitter = 0.1
    @Option(help: "The deadline of each attempt (default: 3s).", transform: ArgumentValue.duration) var deadline = MsgDuration.seconds(3)
    @Option(help: "Messages per batch: one claim commit, one outcome commit; handed to the transport in calls of about 250 ms.") var batch = 1024

    func validate() throws {
        if maxAttempts < 1 { throw ValidationError("--max-attempts must be at least 1") }
        if batch < 1 { throw ValidationError("--batch must be at least 1") }
        if !(0...1).contains(jitter) { throw ValidationError("--jitter must be between 0 and 1") }
    }

    func policy() -> RetryPolicy {
        var p = RetryPolicy()
        p.maxAttempts = maxAttempts
        p.base = backoffBase
        p.cap = backoffCap
        p.jitter = jitter
        return p
    }

    func options(statuses: Set<Status>) -> Flusher.Options {
        var o = Flusher.Options()
        o.statuses = statuses
        o.deadline = deadline
        o.batchSize = batch
        return o
    }
}
