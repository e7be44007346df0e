/// Reads the typed fields of a JSON object, with errors that name the field.
struct FieldReader {
    private var members: [JSONValue.Member]
    private let context: String

    init(_ members: [JSONValue.Member], context: String = "") {
        self.members = members
        self.context = context
    }

    private func bad(_ field: String, _ why: String) -> MsgError {
        MsgError(.badInput, "field \"\(context)\(field)\" \(why)")
    }

    func value(_ field: String) -> JSONValue? {
        guard let v = members.last(where: { $0.key == field })?.value else { return nil }
        if case .null = v { return nil }
        return v
    }

    func unknown(known: Set<String> = Message.knownFields) -> [JSONValue.Member] {
        var seen: Set<String> = []
        var result: [JSONValue.Member] = []
        for member in members.reversed() where !known.contains(member.key) && seen.insert(member.key).inserted {
            result.append(member)
        }
        return result.reversed()
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

    func headers() throws(MsgError) -> [(key: String, value: String)] {
        guard let v = value("headers") else { return [] }
        guard case .object(let members) = v else { throw bad("headers", "must be an object of strings") }
        var result: [(key: String, value: String)] = []
        for member in members {
            guard case .string(let s) = member.value else { throw bad("headers.\(member.key)", "must be a string") }
            if let i = result.firstIndex(where: { $0.key == member.key }) { result[i].value = s } else { result.append((member.key, s)) }
        }
        return result
    }

    func failure(_ field: String) throws(MsgError) -> Message.Failure? {
        guard let v = value(field) else { return nil }
        guard case .object(let m) = v else { throw bad(field, "must be an object") }
        let r = FieldReader(m, context: "\(context)\(field).")
        return Message.Failure(code: try r.string("code"), message: try r.string("message"),
                               retryable: try r.bool("retryable"), at: try r.timestamp("at"))
    }

    func lease() throws(MsgError) -> Message.Lease? {
        guard let v = value("lease") else { return nil }
        guard case .object(let m) = v else { throw bad("lease", "must be an object") }
        let r = FieldReader(m, context: "lease.")
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
            let r = FieldReader(m, context: "history[\(i)].")
            events.append(Message.Event(at: try r.timestamp("at"), event: try r.string("event"), status: try r.status("status"),
                                        error: try r.failure("error"), extra: r.unknown(known: ["at", "event", "status", "error"])))
        }
        return events
    }
}
