/// A record's `headers`: user metadata as an ordered map of strings.
///
/// A key appears once. Setting a key that is there replaces its value in place;
/// a new key goes last. Input with a repeated key keeps the first place and the
/// last value, as everywhere in msg.
public struct Headers: Sendable, Equatable, RandomAccessCollection, ExpressibleByArrayLiteral {
    /// One header.
    public struct Field: Sendable, Equatable {
        public var key: String
        public var value: String
        public init(key: String, value: String) {
            self.key = key
            self.value = value
        }
    }

    private var fields: [Field] = []

    /// No headers.
    public init() {}

    /// Headers from pairs in order; a repeated key keeps its first place and last value.
    public init(_ pairs: some Sequence<(key: String, value: String)>) {
        for (key, value) in pairs { self[key] = value }
    }

    public init(arrayLiteral pairs: (String, String)...) {
        for (key, value) in pairs { self[key] = value }
    }

    /// The value of `key`. Setting replaces it in place or adds it last; nil removes it.
    public subscript(key: String) -> String? {
        get { fields.first(where: { $0.key == key })?.value }
        set {
            let i = fields.firstIndex(where: { $0.key == key })
            switch (i, newValue) {
            case (let i?, let v?): fields[i].value = v
            case (let i?, nil): fields.remove(at: i)
            case (nil, let v?): fields.append(Field(key: key, value: v))
            case (nil, nil): break
            }
        }
    }

    /// Sets every header of `other`, as ``subscript(_:)`` does one.
    public mutating func merge(_ other: Headers) {
        for field in other.fields { self[field.key] = field.value }
    }

    /// Removes the headers named in `keys`.
    public mutating func remove(_ keys: some Sequence<String>) {
        let gone = Set(keys)
        fields.removeAll { gone.contains($0.key) }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { fields.count }
    /// The header at `position`, in order.
    public subscript(position: Int) -> Field { fields[position] }
}
