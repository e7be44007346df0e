import MsgKit

/// What the config file sets at one level, its global keys or one
/// `[destination PATTERN]` section's, read: nil where it sets nothing. A value
/// that does not read is a ``ConfigProblem`` naming its line, and stays nil.
public struct ConfigValues: Sendable, Equatable {
    public var transport: String?
    public var maxAttempts: Int?
    public var backoffBase: MsgDuration?
    public var backoffCap: MsgDuration?
    public var giveUpAfter: MsgDuration?
    /// The deadline of each attempt.
    public var deadline: MsgDuration?
    /// Destinations delivered to at once (in a section: its own workers).
    public var concurrency: Int?
    /// The throttle (its burst from ``burst``).
    public var rate: Rate?
    public var burst: Int?
    /// Retryable failures in a row that open the breaker; 0: never.
    public var breaker: Int?
    public var breakerCooldown: MsgDuration?
    /// The line each key was set on.
    public var lines: [String: Int] = [:]

    public init() {}

    /// Whether any key of the retry policy is set.
    public var setsPolicy: Bool { maxAttempts != nil || backoffBase != nil || backoffCap != nil || giveUpAfter != nil }
    /// Whether the destinations it applies to have delivery workers of their own.
    public var hasOwnWorkers: Bool { deadline != nil || concurrency != nil }

    /// Reads `values`, keeping what does not read in `problems`; `expand` expands a
    /// transport URL (`$MSG_HOME`, `~/`).
    init(_ values: [String: ConfigFile.Value], in file: ConfigFile.Contents, problems: inout [ConfigProblem], expand: (String) -> String) {
        for (key, v) in values { lines[key] = v.line }
        func read<T>(_ key: String, _ parse: (String) throws(MsgError) -> T) -> T? {
            guard let v = values[key] else { return nil }
            do throws(MsgError) { return try parse(v.text) } catch {
                problems.append(file.problem(key, v, error.message))
                return nil
            }
        }
        func count(_ lowest: Int, _ highest: Int = .max, _ what: String) -> (String) throws(MsgError) -> Int {
            { (text: String) throws(MsgError) -> Int in
                guard let n = Int(text), n >= lowest, n <= highest else {
                    throw MsgError(.config, "'\(text)' is not \(what)")
                }
                return n
            }
        }
        let duration = { (text: String) throws(MsgError) -> MsgDuration in
            let d = try MsgDuration(parsing: text)
            guard d.milliseconds > 0 else { throw MsgError(.config, "must be longer than 0") }
            return d
        }
        transport = values["transport"].map { expand($0.text) }
        maxAttempts = read("max_attempts", count(0, .max, "a count of attempts (0: no count, the give-up age decides)"))
        backoffBase = read("backoff_base", duration)
        backoffCap = read("backoff_cap", duration)
        giveUpAfter = read("give_up_after", duration)
        deadline = read("deadline", duration)
        concurrency = read("concurrency", count(1, 256, "a count of destinations at once, from 1 to 256"))
        rate = read("rate") { (text: String) throws(MsgError) -> Rate in try Rate(parsing: text) }
        burst = read("burst", count(1, .max, "a count of messages, 1 or more"))
        breaker = read("breaker", count(0, .max, "a count of failures in a row (0: never open)"))
        breakerCooldown = read("breaker_cooldown", duration)
        if let v = values["burst"], rate == nil, values["rate"] == nil {
            problems.append(ConfigProblem(path: file.path, line: v.line, text: "burst: applies to a rate, and none is set here", isError: false))
        }
    }
}

/// A `[destination PATTERN]` section of the config file, read; or a `--route`.
public struct DestinationSection: Sendable, Equatable {
    public var pattern: String
    /// Its line in the config file; 0 for a `--route` given for the run.
    public var line: Int
    public var values: ConfigValues

    public init(pattern: String, line: Int, values: ConfigValues) {
        self.pattern = pattern
        self.line = line
        self.values = values
    }

    /// Where it comes from, for a person: `[destination P] (line N)`, or `--route P=…`.
    public var origin: String { line > 0 ? "[destination \(pattern)] (line \(line))" : "--route \(pattern)" }
}
