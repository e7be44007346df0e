/// Reads the typed fields of a JSON object, with errors that name the field.
///
/// One pass over the members notes where each known key last appears, so each
/// field is then found without searching, and unknown members are collected in
/// their order (the last of a repeated key wins, as everywhere in msg).
struct FieldReader {
    private let members: [JSONValue.Member]
    private let context: String
    private let keys: [String]
    private var slots: [Int]
    private var unknownIndexes: [Int] = []

    /// The keys of a record, in the order msg writes them.
    static let recordKeys = RecordField.keys

    init(_ members: [JSONValue.Member], context: String = "", keys: [String] = FieldReader.recordKeys) {
        self.members = members
        self.context = context
        self.keys = keys
        slots = [Int](repeating: -1, count: keys.count)
        for (i, member) in members.enumerated() {
            if let k = keys.firstIndex(of: member.key) {
                slots[k] = i
            } else {
                unknownIndexes.append(i)
            }
        }
    }

    private func bad(_ field: String, _ why: String) -> MsgError {
        MsgError(.badInput, "field \"\(context)\(field)\" \(why)")
    }

    func value(_ field: String) -> JSONValue? {
        guard let k = keys.firstIndex(of: field), slots[k] >= 0 else { return nil }
        let v = members[slots[k]].value
        if case .null = v { return nil }
        return v
    }

    /// The members whose keys are not known, in order; a repeated key keeps its last value.
    func unknown() -> [JSONValue.Member] {
        var result: [JSONValue.Member] = []
        result.reserveCapacity(unknownIndexes.count)
        for i in unknownIndexes {
            let member = members[i]
            if let j = result.firstIndex(where: { $0.key == member.key }) {
                result.remove(at: j)
            }
            result.append(member)
        }
        return result
    }

    func id() throws(MsgError) -> String {
        guard let v = value("id") else { throw MsgError(.badInput, "missing field \"id\"") }
        guard case .string(let s) = v, UUIDText.isCanonical(s) else {
            throw bad("id", "must be a lower-case UUID such as 01890a5d-ac96-774b-bcce-b302099a8057")
        }
        return s
    }

    func string(_ field: String) throws(MsgError) -> String {
        guard let v = value(field) else { throw MsgError(.badInput, "missing field \"\(context)\(field)\"") }
        guard case .string(let s) = v else { throw bad(field, "must be a string, not \(v.kindName)") }
        return s
    }

    func nonEmptyString(_ field: String) throws(MsgError) -> String {
        let s = try string(field)
        if s.isEmpty { throw bad(field, "must not be empty") }
        return s
    }

    func optionalString(_ field: String) throws(MsgError) -> String? {
        guard value(field) != nil else { return nil }
        return try string(field)
    }

    func int(_ field: String) throws(MsgError) -> Int {
        guard let v = value(field) else { throw MsgError(.badInput, "missing field \"\(context)\(field)\"") }
        guard let n = v.intValue, n >= 0 else { throw bad(field, "must be a whole number ≥ 0") }
        return n
    }

    func bool(_ field: String) throws(MsgError) -> Bool {
        guard case .bool(let b)? = value(field) else { throw bad(field, "must be true or false") }
        return b
    }

    func status(_ field: String) throws(MsgError) -> Status {
        let s = try string(field)
        guard let status = Status(rawValue: s) else {
            throw bad(field, "has unknown status '\(s)'; expected one of \(Status.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return status
    }

    func timestamp(_ field: String) throws(MsgError) -> Timestamp {
        let s = try string(field)
        guard let t = Timestamp(rfc3339: s) else { throw bad(field, "must be an RFC 3339 time such as 2026-11-22T13:08:00.123Z, not '\(s)'") }
        return t
    }

    func optionalTimestamp(_ field: String) throws(MsgError) -> Timestamp? {
        guard value(field) != nil else { return nil }
        return try timestamp(field)
    }

    func headers() throws(MsgError) -> Headers {
        guard let v = value("headers") else { return [] }
        guard case .object(let members) = v else { throw bad("headers", "must be an object of strings") }
        var result = Headers()
        for member in members {
            guard case .string(let s) = member.value else { throw bad("headers.\(member.key)", "must be a string") }
            result[member.key] = s
        }
        return result
    }

    func failure(_ field: String) throws(MsgError) -> Message.Failure? {
        guard let v = value(field) else { return nil }
        guard case .object(let m) = v else { throw bad(field, "must be an object") }
        let r = FieldReader(m, context: "\(context)\(field).", keys: ["code", "message", "retryable", "at"])
        return Message.Failure(code: try r.string("code"), message: try r.string("message"),
                               retryable: try r.bool("retryable"), at: try r.timestamp("at"))
    }

    func lease() throws(MsgError) -> Message.Lease? {
        guard let v = value("lease") else { return nil }
        guard case .object(let m) = v else { throw bad("lease", "must be an object") }
        let r = FieldReader(m, context: "lease.", keys: ["host", "pid", "until"])
        let pid = try r.int("pid")
        guard pid <= Int(Int32.max) else { throw MsgError(.badInput, "field \"lease.pid\" is out of range") }
        return Message.Lease(host: try r.string("host"), pid: Int32(pid), until: try r.timestamp("until"))
    }

    func history() throws(MsgError) -> [Message.Event] {
        guard let v = value("history") else { return [] }
        guard case .array(let elements) = v else { throw bad("history", "must be an array") }
        var events: [Message.Event] = []
        events.reserveCapacity(elements.count)
        for (i, element) in elements.enumerated() {
            guard case .object(let m) = element else { throw bad("history[\(i)]", "must be an object") }
            let r = FieldReader(m, context: "history[\(i)].", keys: ["at", "event", "status", "error"])
            events.append(Message.Event(at: try r.timestamp("at"), event: try r.string("event"), status: try r.status("status"),
                                        error: try r.failure("error"), extra: r.unknown()))
        }
        return events
    }
}
