/// What `compose` reads on stdin: the content fields of a record (msg-compose(1)).
///
/// It is read by the record's own reader, so a draft's fields are checked and their
/// errors worded as a record's. Fields that describe a record's life
/// (``RecordField/isLifecycle``) are dropped: the new record starts its life afresh.
/// Fields msg does not know are kept.
public struct Draft: Sendable, Equatable {
    /// The id it carries (its idempotency key), if any.
    public var id: String?
    /// The recipient, if given (`compose --to` may supply it).
    public var to: String?
    public var from: String?
    public var body: String
    public var headers: Headers
    public var notBefore: Timestamp?
    /// When it expires, if given.
    public var expiresAt: Timestamp?
    /// Fields msg does not know, in order.
    public var extra: [JSONValue.Member]

    /// Reads a draft object.
    /// - Throws: `badInput` naming the field that is missing or wrong.
    public init(json: JSONValue) throws(MsgError) {
        guard case .object(let members) = json else {
            throw MsgError(.badInput, "expected a draft object such as {\"to\":\"bob\",\"body\":\"hi\"}, got \(json.kindName)")
        }
        let fields = FieldReader(members)
        id = fields.value(RecordField.id.key) == nil ? nil : try fields.id()
        to = fields.value(RecordField.to.key) == nil ? nil : try fields.nonEmptyString(RecordField.to.key)
        from = try fields.optionalString(RecordField.from.key)
        body = try fields.string(RecordField.body.key)
        headers = try fields.headers()
        notBefore = try fields.optionalTimestamp(RecordField.notBefore.key)
        expiresAt = try fields.optionalTimestamp(RecordField.expiresAt.key)
        extra = fields.unknown()
    }
}
