import MsgKit

/// The subject a message is published on: text with `{to}`, `{from}` or `{id}`
/// where that field of the record goes (`orders.{to}`), checked against NATS's
/// subject rules: tokens of printable ASCII without space, separated by single
/// dots, none of them a wildcard (`*`, `>`).
struct SubjectTemplate: Sendable, Equatable {
    enum Part: Sendable, Equatable {
        case text(String)
        case field(Field)
    }

    enum Field: String, Sendable {
        case to, from, id
    }

    let parts: [Part]

    /// Whether every message gets the same subject.
    var isFixed: Bool { !parts.contains { if case .field = $0 { true } else { false } } }

    /// - Throws: `config` for an empty subject, an unknown field, or text that makes
    ///   no valid subject whatever the fields hold.
    init(_ text: String) throws(MsgError) {
        guard !text.isEmpty else {
            throw MsgError(.config, "nats: the URL needs a subject after the server, e.g. nats://127.0.0.1:4222/orders.new")
        }
        var parts: [Part] = []
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{") {
            if open > rest.startIndex { parts.append(.text(String(rest[..<open]))) }
            guard let close = rest[open...].firstIndex(of: "}") else {
                throw MsgError(.config, "nats: subject '\(text)' has a '{' without its '}'")
            }
            let name = String(rest[rest.index(after: open)..<close])
            guard let field = Field(rawValue: name) else {
                throw MsgError(.config, "nats: subject '\(text)' names {\(name)}; a subject may name {to}, {from} or {id}")
            }
            parts.append(.field(field))
            rest = rest[rest.index(after: close)...]
        }
        if !rest.isEmpty { parts.append(.text(String(rest))) }
        self.parts = parts
        // Check the text around the fields with a plain token standing for each.
        if let problem = Self.problem(in: render { _ in "x" }) {
            throw MsgError(.config, "nats: subject '\(text)' \(problem)")
        }
    }

    /// The subject for `message`. - Throws: `rejected` when a field makes it no
    /// subject (the message can never be published there).
    func subject(for message: Message) throws(MsgError) -> String {
        let subject = render { field in
            switch field {
            case .to: message.to
            case .from: message.from ?? ""
            case .id: message.id
            }
        }
        if let problem = Self.problem(in: subject) {
            throw MsgError(.rejected, "nats: the subject '\(subject)' made for this message \(problem)")
        }
        return subject
    }

    private func render(_ value: (Field) -> String) -> String {
        var out = ""
        for part in parts {
            switch part {
            case .text(let t): out += t
            case .field(let f): out += value(f)
            }
        }
        return out
    }

    /// Why `subject` is not one NATS publishes to, or nil.
    static func problem(in subject: String) -> String? {
        guard !subject.isEmpty else { return "is empty" }
        guard subject.utf8.count <= 1024 else { return "is longer than 1,024 bytes" }
        guard subject.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            return "has a space, a control character or a byte outside ASCII"
        }
        for token in subject.split(separator: ".", omittingEmptySubsequences: false) {
            if token.isEmpty { return "has an empty token (a leading, trailing or double '.')" }
            if token == "*" || token == ">" { return "has the wildcard '\(token)'; a message is published to one subject" }
        }
        return nil
    }
}
