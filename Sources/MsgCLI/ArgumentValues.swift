import ArgumentParser
import MsgEngine
import MsgKit

/// The typed values of the command line: each parsed once, by argument-parser
/// (`@Option(transform:)`), into the type the engine takes, with msg's own words
/// for what is wrong. A command never keeps such a value as text.
enum ArgumentValue {
    /// A duration: `500ms`, `30s`, `5m`, `2h`, `7d`.
    static func duration(_ text: String) throws -> MsgDuration {
        try checked { () throws(MsgError) in try MsgDuration(parsing: text) }
    }

    /// A time: RFC 3339, a date (`2026-11-23`), or an age before now (`1h`).
    static func time(_ text: String) throws -> Timestamp {
        try checked { () throws(MsgError) in try TimeArgument.parse(text) }
    }

    /// What makes a destination: `to`, or `header:NAME`.
    static func destinationKey(_ text: String) throws -> DestinationKey {
        try checked { () throws(MsgError) in try DestinationKey(parsing: text) }
    }

    /// A time: RFC 3339, or a delay after now (`10m`).
    static func futureTime(_ text: String) throws -> Timestamp {
        try checked { () throws(MsgError) in try TimeArgument.parse(text, future: true) }
    }

    /// Statuses, comma-separated; `all` for every one. Repeated options add up.
    static func statuses(_ text: String) throws -> Set<Status> {
        if text.trimmingSpaces() == "all" { return Set(Status.allCases) }
        return try checked { () throws(MsgError) in try Status.parseList(text) }
    }

    /// A rate: `10/s`, `600/m`, `5000/h`.
    static func rate(_ text: String) throws -> Rate {
        try checked { () throws(MsgError) in try Rate(parsing: text) }
    }

    /// Where `--metrics` serves: `HOST:PORT`.
    static func metricsAddress(_ text: String) throws -> MetricsAddress {
        try checked { () throws(MsgError) in try MetricsAddress(parsing: text) }
    }

    /// A header to match: `NAME`, or `NAME=VALUE`.
    static func headerMatch(_ text: String) throws -> (name: String, value: String?) {
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        guard let name = parts.first, !name.isEmpty else { throw ValidationError("expected NAME or NAME=VALUE, the name not empty") }
        return (String(name), parts.count > 1 ? String(parts[1]) : nil)
    }

    /// A count: a whole number from `lowest` (to `highest`). Every count option
    /// (`--limit`, `--batch`, `--top`…) is read by this one rule, so a negative
    /// number, or a zero where it means nothing, is refused alike (exit 64).
    static func count(from lowest: Int, to highest: Int = .max) -> @Sendable (String) throws -> Int {
        { text in
            guard let n = Int(text), n >= lowest, n <= highest else {
                let range = highest == .max ? "\(lowest) or more" : "from \(lowest) to \(highest)"
                throw ValidationError("expected a whole number, \(range)")
            }
            return n
        }
    }

    /// A receipt's status (`queue mark --status`): delivered or read.
    static func receipt(_ text: String) throws -> Status {
        guard let status = Status(rawValue: text), status == .delivered || status == .read else {
            throw ValidationError("expected delivered or read")
        }
        return status
    }

    /// A last error's code, or `none` (`--error`).
    static func errorMatch(_ text: String) throws -> MessageFilter.ErrorMatch {
        try checked { () throws(MsgError) in try MessageFilter.ErrorMatch(parsing: text) }
    }

    /// A value of `type`, by its name.
    static func oneOf<T: CaseIterable & RawRepresentable & Sendable>(_ type: T.Type) -> @Sendable (String) throws -> T
    where T.RawValue == String {
        let values = Dictionary(T.allCases.map { ($0.rawValue, $0) }, uniquingKeysWith: { first, _ in first })
        let names = T.allCases.map(\.rawValue)
        let said = names.count == 1 ? names[0] : names.dropLast().joined(separator: ", ") + " or " + names[names.count - 1]
        return { text in
            guard let value = values[text] else { throw ValidationError("expected \(said)") }
            return value
        }
    }

    /// A size in bytes, or with KiB/MiB.
    static func size(_ text: String) throws -> Int {
        try checked { () throws(MsgError) in try ListenService.parseSize(text) }
    }

    /// A header, `key=value` (the value may be empty, the key may not).
    static func header(_ text: String) throws -> Headers.Field {
        guard let eq = text.firstIndex(of: "="), eq != text.startIndex else {
            throw ValidationError("a header is key=value, not '\(text)'")
        }
        return Headers.Field(key: String(text[..<eq]), value: String(text[text.index(after: eq)...]))
    }

    /// `body` as argument-parser reports a bad value: its message, as one line.
    private static func checked<T>(_ body: () throws(MsgError) -> T) throws -> T {
        do { return try body() } catch { throw ValidationError(error.message) }
    }
}

/// What the shells complete (bash, zsh and fish scripts from `--generate-completion-script`,
/// and `msg shell`'s own completion), as argument-parser asks for it.
enum Completion {
    /// The statuses and `all`.
    static let statuses = CompletionKind.list(Status.allCases.map(\.rawValue) + ["all"])

    /// How a store URL starts, one per store msg ships.
    static let storeSchemes = ["sqlite:", "json:", "postgres://"]
    /// How a transport URL starts, one per transport msg ships.
    static let transportSchemes = ["file:", "tcp://", "exec:", "http://", "https://", "stdout:"]

    /// Ids stored in the queue the command line names (`--store`, else the
    /// environment and config file), up to 200 that start with what was typed.
    static let ids = CompletionKind.custom { words, _, prefix in
        var overrides = Settings.Overrides()
        if let i = words.firstIndex(of: "--store"), i + 1 < words.count { overrides.store = words[i + 1] }
        guard let settings = try? Settings.resolve(overrides) else { return [] }
        let quiet = Console(input: -1, output: -1, error: -1, reporter: Reporter { _ in })
        return Session(settings: settings, console: quiet).storedIDs(matching: prefix)
    }
}

extension Array where Element == Set<Status> {
    /// Repeated status options as one set; nil (every status) when none was given.
    var union: Set<Status>? { isEmpty ? nil : reduce(into: Set<Status>()) { $0.formUnion($1) } }
}
