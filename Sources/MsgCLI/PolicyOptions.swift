import ArgumentParser
import MsgEngine
import MsgKit

/// The retry policy and deadline of `flush` and `retry` (docs/DESIGN.md 6).
struct PolicyOptions: ParsableArguments {
    @Option(name: .customLong("max-attempts"), help: "Counted attempts before a message is dead; 0: no count, the give-up age decides (default: 0, or max_attempts in the config file). Promised to each message this run fails.",
            transform: ArgumentValue.count(from: 0))
    var maxAttempts: Int?
    @Option(name: .customLong("give-up-after"), help: ArgumentHelp("A message still failing this long after its first failure is dead (default: 5d, or give_up_after in the config file). Promised to each message this run fails.", valueName: "duration"),
            transform: ArgumentValue.duration)
    var giveUpAfter: MsgDuration?
    @Option(name: .customLong("backoff-base"), help: "The delay after the first failure (default: 1s, or backoff_base in the config file).", transform: ArgumentValue.duration)
    var backoffBase: MsgDuration?
    @Option(name: .customLong("backoff-cap"), help: "The longest delay (default: 1h, or backoff_cap in the config file).", transform: ArgumentValue.duration)
    var backoffCap: MsgDuration?
    @Option(help: "Extra random delay, as a fraction of the delay (0.1 = up to 10%).") var jitter = 0.1
    @Option(help: "The deadline of each attempt (default: 3s, or deadline in the config file and its sections).", transform: ArgumentValue.duration)
    var deadline: MsgDuration?
    @Option(help: "Messages per batch: one claim commit, one outcome commit; handed to the transport in calls of about 250 ms.",
            transform: ArgumentValue.count(from: 1))
    var batch = 1024
    @Option(help: "Destinations delivered to at once, each in FIFO order with one message in flight (default: 1, or concurrency in the config file); a [destination] section that sets deadline or concurrency has workers of its own besides.",
            transform: ArgumentValue.count(from: 1, to: 256))
    var concurrency: Int?
    @Option(help: ArgumentHelp("What makes a destination: to, header:NAME, or id (each message its own).", valueName: "key"),
            transform: ArgumentValue.destinationKey)
    var key = DestinationKey.recipient
    @Option(help: ArgumentHelp("At most this many messages per destination, shared by every process on the store: 10/s, 600/m, 5000/h (or rate in the config file and its sections).", valueName: "rate"),
            transform: ArgumentValue.rate)
    var rate: Rate?
    @Option(help: "Messages a destination may get at once after an idle time, with --rate (default: 1).", transform: ArgumentValue.count(from: 1))
    var burst: Int?
    @Option(help: "Retryable failures in a row that open a destination's circuit breaker; 0 never opens it (default: 5, or breaker in the config file and its sections).", transform: ArgumentValue.count(from: 0))
    var breaker: Int?
    @Option(name: .customLong("breaker-cooldown"), help: "How long an open breaker waits before one message probes; doubles each time it opens again, up to 20 times (default: 30s, or the backoff cap when shorter).",
            transform: ArgumentValue.duration)
    var breakerCooldown: MsgDuration?

    func validate() throws {
        if let breakerCooldown, breakerCooldown.milliseconds < 1 { throw ValidationError("--breaker-cooldown must be positive") }
        for (flag, d) in [("--give-up-after", giveUpAfter), ("--backoff-base", backoffBase), ("--backoff-cap", backoffCap)] {
            if let d, d.milliseconds < 1 { throw ValidationError("\(flag) must be longer than 0") }
        }
        if !(0...1).contains(jitter) { throw ValidationError("--jitter must be between 0 and 1") }
    }

    /// The policy of this run: the flags given over `configured` (the config
    /// file's, over the defaults). A flag applies to every destination this run,
    /// over the config file's sections too.
    func policy(_ configured: RetryPolicy) -> RetryPolicy {
        var p = configured
        p.jitter = jitter
        if let maxAttempts {
            p.maxAttempts = maxAttempts
            p.overrides.maxAttempts = true
        }
        if let giveUpAfter {
            p.giveUpAfter = giveUpAfter
            p.overrides.giveUpAfter = true
        }
        if let backoffBase { p.base = backoffBase }
        if let backoffCap { p.cap = backoffCap }
        if maxAttempts != nil || giveUpAfter != nil || backoffBase != nil || backoffCap != nil {
            p.destinations = p.destinations.map { d in
                var d = d
                if maxAttempts != nil { d.maxAttempts = nil }
                if giveUpAfter != nil { d.giveUpAfter = nil }
                if backoffBase != nil { d.base = nil }
                if backoffCap != nil { d.cap = nil }
                return d
            }
        }
        return p
    }

    /// The run's options: the flags given over what `settings` (the config file)
    /// sets, over the defaults; a flag given applies to every destination, over the
    /// sections too, but for `--concurrency`: the run's own workers, while a section
    /// that sets `deadline` or `concurrency` keeps its own. `policy` is the run's retry policy: an open breaker waits no
    /// longer than its backoff cap unless a cool-down is set (a short cap asks for a
    /// quick return after an outage, which a breaker must not undo).
    func options(statuses: Set<Status>, policy: RetryPolicy, settings: Settings) -> Flusher.Options {
        let c = settings.configured
        let cooldown = breakerCooldown ?? c.breakerCooldown
        let breakerCooldown = cooldown ?? MsgDuration(milliseconds: min(30_000, policy.cap.milliseconds))
        // It doubles at each reopening up to 20 times itself, and, unless given, to the backoff cap.
        let coolDownCap = cooldown != nil ? breakerCooldown.milliseconds * 20
            : min(breakerCooldown.milliseconds * 20, max(breakerCooldown.milliseconds, policy.cap.milliseconds))
        let burst = self.burst ?? c.burst ?? 1
        var o = Flusher.Options()
        o.statuses = statuses
        o.deadline = deadline ?? c.deadline ?? .seconds(3)
        o.batchSize = batch
        o.concurrency = concurrency ?? c.concurrency ?? 1
        o.rules.key = key
        o.rules.rate = (rate ?? c.rate).map { Rate(count: $0.count, periodMilliseconds: $0.periodMilliseconds, burst: burst) }
        o.rules.breakerThreshold = breaker ?? c.breaker ?? 5
        o.rules.coolDown = breakerCooldown
        o.rules.coolDownCap = MsgDuration(milliseconds: coolDownCap)
        for section in settings.sections {
            let v = section.values
            if v.hasOwnWorkers {
                o.lanes.append(Flusher.Options.Lane(pattern: section.pattern, deadline: deadline ?? v.deadline ?? o.deadline,
                                                    concurrency: v.concurrency ?? 1))
            }
            var d = DeliveryRules.Destination(pattern: section.pattern)
            if rate == nil, let r = v.rate { d.rate = Rate(count: r.count, periodMilliseconds: r.periodMilliseconds, burst: v.burst ?? burst) }
            if breaker == nil { d.breakerThreshold = v.breaker }
            if self.breakerCooldown == nil, let cool = v.breakerCooldown {
                d.coolDown = cool
                d.coolDownCap = MsgDuration(milliseconds: cool.milliseconds * 20)
            }
            if d != DeliveryRules.Destination(pattern: section.pattern) { o.rules.destinations.append(d) }
        }
        return o
    }
}
