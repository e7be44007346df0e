import MsgKit

extension RetryPolicy {
    /// The policy a config file sets: its global keys over the defaults, and its
    /// `[destination PATTERN]` sections that set any policy key.
    init(configured global: ConfigValues, sections: [DestinationSection]) {
        self.init()
        if let v = global.maxAttempts { maxAttempts = v }
        if let v = global.backoffBase { base = v }
        if let v = global.backoffCap { cap = v }
        if let v = global.giveUpAfter { giveUpAfter = v }
        for section in sections where section.values.setsPolicy {
            var d = Destination(pattern: section.pattern)
            d.maxAttempts = section.values.maxAttempts
            d.base = section.values.backoffBase
            d.cap = section.values.backoffCap
            d.giveUpAfter = section.values.giveUpAfter
            destinations.append(d)
        }
    }
}
