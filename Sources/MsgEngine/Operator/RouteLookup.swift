#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// `msg route`: where a destination's messages go and under which policy, as a
/// run with the same settings and flags would send them (Postfix's `postmap -q`
/// answers one lookup): the transport, the retry policy, the deadline and workers,
/// the throttle and the breaker, each with what set it (a flag, a
/// `[destination PATTERN]` section and its line, a global key of the config file
/// and its line, or the default).
public struct RouteLookup: Sendable {
    let settings: Settings
    let policy: RetryPolicy
    let options: Flusher.Options
    /// The config keys a flag set for the run (`deadline`, `max_attempts`…).
    let flags: Set<String>

    /// `policy` and `options` are the run's, as `flush` makes them from `settings`
    /// and the flags named in `flags`.
    public init(settings: Settings, policy: RetryPolicy, options: Flusher.Options, flags: Set<String>) {
        self.settings = settings
        self.policy = policy
        self.options = options
        self.flags = flags
    }

    /// What a run does with the messages to one destination.
    public struct Answer: Sendable, Equatable {
        public var destination: String
        /// The transport URL, shown without credentials or parameters.
        public var transport: String
        public var policy: RetryPolicy
        public var deadline: MsgDuration
        /// The destinations of its lane delivered to at once.
        public var workers: Int
        /// Whether its lane is its section's own (not shared with the rest).
        public var ownWorkers: Bool
        public var rate: Rate?
        public var breaker: Int
        public var coolDown: MsgDuration
        /// What set each part: `transport`, `policy`, `workers`, `rules`.
        public var from: [String: String]
    }

    public func answer(_ destination: String) -> Answer {
        let retry = policy.resolved(for: destination)
        let rules = options.rules.resolved(for: destination)
        let lane = options.lanes.first { fnmatch($0.pattern, destination, 0) == 0 }
        let route = settings.route(for: destination)
        var from = ["transport": route.origin]
        from["policy"] = origin(of: ["max_attempts", "backoff_base", "backoff_cap", "give_up_after"], destination) { $0.setsPolicy }
        // --concurrency sets the run's own workers, not a section's.
        from["workers"] = origin(of: lane == nil ? ["deadline", "concurrency"] : ["deadline"], destination) { $0.hasOwnWorkers }
        from["rules"] = origin(of: ["rate", "burst", "breaker", "breaker_cooldown"], destination) {
            $0.rate != nil || $0.breaker != nil || $0.breakerCooldown != nil
        }
        return Answer(destination: destination, transport: Session.shown(route.url), policy: retry,
                      deadline: lane?.deadline ?? options.deadline, workers: lane?.concurrency ?? options.concurrency,
                      ownWorkers: lane != nil, rate: rules.rate, breaker: rules.breakerThreshold, coolDown: rules.coolDown, from: from)
    }

    /// What set `keys` for `destination`: a flag for the run, the first section that
    /// matches it and `applies`, a global key of the config file, or the default.
    private func origin(of keys: [String], _ destination: String, applies: (ConfigValues) -> Bool) -> String {
        if let flag = keys.first(where: flags.contains) { return "--" + flag.replacingOccurrences(of: "_", with: "-") }
        if let s = settings.sections.first(where: { applies($0.values) && fnmatch($0.pattern, destination, 0) == 0 }) { return s.origin }
        let lines = keys.compactMap { settings.configured.lines[$0] }
        if let line = lines.min(), let path = settings.configPath { return "\(path) line \(line)" }
        return "default"
    }

    /// One answer as a JSON object (`msg route` into a pipe).
    public static func json(_ a: Answer) -> JSONValue {
        var m: [JSONValue.Member] = [
            .init("destination", .string(a.destination)),
            .init("transport", .string(a.transport)),
            .init("route", .string(a.from["transport"] ?? "")),
            .init("max_attempts", .number(String(a.policy.maxAttempts))),
            .init("backoff_base", .string(a.policy.base.description)),
            .init("backoff_cap", .string(a.policy.cap.description)),
            .init("give_up_after", .string(a.policy.giveUpAfter.description)),
            .init("policy_from", .string(a.from["policy"] ?? "")),
            .init("deadline", .string(a.deadline.description)),
            .init("concurrency", .number(String(a.workers))),
            .init("own_workers", .bool(a.ownWorkers)),
            .init("workers_from", .string(a.from["workers"] ?? "")),
            .init("rate", a.rate.map { .string($0.description) } ?? .null),
            .init("breaker", .number(String(a.breaker))),
            .init("breaker_cooldown", .string(a.coolDown.description)),
            .init("rules_from", .string(a.from["rules"] ?? "")),
        ]
        m.removeAll { $0.key == "rate" && $0.value == .null }
        return .object(m)
    }

    /// One answer for a person: the destination, then a line for each part and what set it.
    public static func text(_ a: Answer) -> String {
        let p = a.policy
        let attempts = p.maxAttempts > 0 ? "at most \(p.maxAttempts) attempts" : "no count of attempts"
        let workers = a.ownWorkers ? "\(a.workers) worker\(a.workers == 1 ? "" : "s") of its own" : "the run's \(a.workers) worker\(a.workers == 1 ? "" : "s")"
        let breaker = a.breaker > 0 ? "opens after \(a.breaker) failures in a row, cool-down \(a.coolDown)" : "never opens"
        let rows = [
            ("transport", a.transport, a.from["transport"]),
            ("retry", "backoff \(p.base) to \(p.cap), dead \(p.giveUpAfter) after its first failure, \(attempts)", a.from["policy"]),
            ("delivery", "deadline \(a.deadline), \(workers)", a.from["workers"]),
            ("rules", "breaker \(breaker); " + (a.rate.map { "throttle \($0)" } ?? "no throttle"), a.from["rules"]),
        ]
        var out = TextTable.escaped(a.destination) + "\n"
        for (name, value, origin) in rows {
            out += "  " + name.padding(9) + " " + TextTable.escaped(value) + "   from " + (origin ?? "default") + "\n"
        }
        return out
    }
}

extension String {
    /// The string padded with spaces to `width` characters.
    fileprivate func padding(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
