#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// A plugin URL's parameters, read by name and each value by its type: the one
/// reader of the transports' settings, so each refuses a value alike, with one
/// line (`config`) that names the parameter, what it must be and what it got, and
/// refuses a name it does not take, naming the one it is nearly (a misspelt
/// option is never dropped in silence). When a name is given twice the last wins.
public struct URLParameters {
    /// What the errors begin with: the scheme, as `exec:`.
    public let what: String
    private let given: [(name: String, value: String)]

    /// The parameters of `url`. - Throws: `config` for a name not in `names` that
    /// `also` does not take (a server's own query, as http:'s `query.NAME`):
    /// `refusal` says so when given, else the error names the one it is nearly,
    /// or the names it takes.
    public init(_ url: PluginURL, _ what: String, names: [String], also: (String) -> Bool = { _ in false },
                refusal: ((String) -> MsgError)? = nil) throws(MsgError) {
        self.what = what
        given = url.parameters
        for (name, _) in given where !names.contains(name) && !also(name) {
            if let refusal { throw refusal(name) }
            if let near = ParameterSpelling.nearest(name, in: names) {
                throw MsgError(.config, "\(what) unknown parameter '\(name)' (did you mean \(near)=?)")
            }
            throw MsgError(.config, "\(what) unknown parameter '\(name)'; it takes " + (names.isEmpty ? "none" : names.joined(separator: ", ")))
        }
    }

    /// The value of `name`, as given; nil when it is not.
    public func text(_ name: String) -> String? {
        given.last { $0.name == name }?.value
    }

    /// The error for `name`'s value: what it must be, and what it got.
    public func error(_ name: String, mustBe: String) -> MsgError {
        MsgError(.config, "\(what) parameter \(name) must be \(mustBe), got '\(text(name) ?? "")'")
    }

    /// A value that `valid` takes. - Throws: `config`, saying it must be `mustBe`.
    public func text(_ name: String, mustBe: String, _ valid: (String) -> Bool) throws(MsgError) -> String? {
        guard let value = text(name) else { return nil }
        guard valid(value) else { throw error(name, mustBe: mustBe) }
        return value
    }

    /// A whole number in `range`.
    public func int(_ name: String, in range: ClosedRange<Int>) throws(MsgError) -> Int? {
        try text(name, mustBe: "a number from \(range.lowerBound) to \(range.upperBound)") { Int($0).map(range.contains) == true }
            .flatMap { Int($0) }
    }

    /// One of `choices` (the first of each pair is what is written).
    public func choice<T>(_ name: String, _ choices: KeyValuePairs<String, T>) throws(MsgError) -> T? {
        guard let value = text(name) else { return nil }
        guard let found = choices.first(where: { $0.key == value }) else {
            let keys = choices.map(\.key)
            throw error(name, mustBe: keys.dropLast().joined(separator: ", ") + " or " + (keys.last ?? ""))
        }
        return found.value
    }

    /// `yes` or `no`.
    public func yes(_ name: String) throws(MsgError) -> Bool? {
        try choice(name, ["yes": true, "no": false])
    }

    /// A duration (`MsgDuration`: 500ms, 10s, 2m…).
    public func duration(_ name: String) throws(MsgError) -> MsgDuration? {
        guard let value = text(name) else { return nil }
        do throws(MsgError) {
            return try MsgDuration(parsing: value)
        } catch {
            throw MsgError(.config, "\(what) parameter \(name): \(error.message)")
        }
    }

    /// The path of a file this process can read.
    public func readable(_ name: String) throws(MsgError) -> String? {
        guard let path = text(name) else { return nil }
        guard access(path, R_OK) == 0 else { throw SystemCalls.error(.config, "\(what) cannot read \(name) \(path)") }
        return path
    }
}
