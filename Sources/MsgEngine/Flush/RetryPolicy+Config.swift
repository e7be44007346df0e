import MsgKit

extension RetryPolicy {
    /// The policy a config file sets: its global keys over the defaults, and its
    /// `[destination PATTERN]` sections that set any policy key.
    /// - Throws: `config`, naming the file, line and key, for a value that does not read.
    init(config file: ConfigFile.Contents) throws(MsgError) {
        self.init()
        func attempts(_ key: String, _ v: ConfigFile.Value) throws(MsgError) -> Int {
            guard let n = Int(v.text), n >= 0 else { throw file.error(key, v, "'\(v.text)' is not a count of attempts (0: no count, the give-up age decides)") }
            return n
        }
        func duration(_ key: String, _ v: ConfigFile.Value) throws(MsgError) -> MsgDuration {
            let d: MsgDuration
            do throws(MsgError) { d = try MsgDuration(parsing: v.text) } catch { throw file.error(key, v, error.message) }
            guard d.milliseconds > 0 else { throw file.error(key, v, "must be longer than 0") }
            return d
        }
        if let v = file.values["max_attempts"] { maxAttempts = try attempts("max_attempts", v) }
        if let v = file.values["backoff_base"] { base = try duration("backoff_base", v) }
        if let v = file.values["backoff_cap"] { cap = try duration("backoff_cap", v) }
        if let v = file.values["give_up_after"] { giveUpAfter = try duration("give_up_after", v) }
        for section in file.sections {
            var d = Destination(pattern: section.pattern)
            var any = false
            if let v = section.values["max_attempts"] { d.maxAttempts = try attempts("max_attempts", v); any = true }
            if let v = section.values["backoff_base"] { d.base = try duration("backoff_base", v); any = true }
            if let v = section.values["backoff_cap"] { d.cap = try duration("backoff_cap", v); any = true }
            if let v = section.values["give_up_after"] { d.giveUpAfter = try duration("give_up_after", v); any = true }
            if any { destinations.append(d) }
        }
    }
}
