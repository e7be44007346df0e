import MsgKit

/// Where an engine component says what the user should know: one line each, which
/// the command line writes to standard error as `msg: <line>` (docs/DESIGN.md 5).
///
/// Injected, as swift-log injects its handler: a component is given a reporter
/// rather than writing to a descriptor itself, so a test reads what it said and
/// `msg shell` decides where its lines go.
public struct Reporter: Sendable {
    private let emit: @Sendable (String) -> Void

    /// A reporter that hands each line (without `msg: ` and newline) to `emit`.
    public init(_ emit: @escaping @Sendable (String) -> Void) {
        self.emit = emit
    }

    /// Says one line.
    public func say(_ text: String) { emit(text) }

    /// Reports a bad input line: `line N: <problem>`.
    public func badLine(_ number: Int, _ error: MsgError) {
        say("line \(number): \(error.message)")
    }

}
