/// A JSON value as msg reads and writes it.
///
/// Objects keep their members in input order and numbers keep their exact text,
/// so fields msg does not know are written back unchanged (docs/DESIGN.md 2).
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number, as its JSON text (e.g. `1.50e3`), never rounded through a Double.
    case number(String)
    case string(String)
    case array([JSONValue])
    /// An object's members in their order of appearance.
    case object([Member])

    /// One `"key": value` pair of an object.
    public struct Member: Sendable, Equatable {
        public var key: String
        public var value: JSONValue
        public init(_ key: String, _ value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// The string, when this is a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The members, when this is an object.
    public var members: [Member]? {
        if case .object(let m) = self { return m }
        return nil
    }

    /// The last member named `key`, when this is an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.last(where: { $0.key == key })?.value
    }

    /// A short name of the value's kind, for error messages ("a number").
    public var kindName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// An integer value, when this is a number without fraction or exponent.
    public var intValue: Int? {
        if case .number(let text) = self { return Int(text) }
        return nil
    }
}
