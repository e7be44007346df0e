/// Reading and writing records as JSON objects (docs/DESIGN.md 2).
extension Message {
    /// Reads a full record.
    /// - Throws: `MsgError.badInput` naming the field that is missing or wrong.
    public init(json: JSONValue) throws(MsgError) {
        guard case .object(let members) = json else {
            throw MsgError(.badInput, "expected a JSON object, got \(json.kindName)")
        }
        let fields = FieldReader(members)
        id = try fields.id()
        to = try fields.nonEmptyString("to")
        from = try fields.optionalString("from")
        body = try fields.string("body")
        headers = try fields.headers()
        status = try fields.status("status")
        attempts = try fields.int("attempts")
        createdAt = try fields.timestamp("created_at")
        updatedAt = try fields.timestamp("updated_at")
        notBefore = try fields.optionalTimestamp("not_before")
        nextAttemptAt = try fields.optionalTimestamp("next_attempt_at")
        expiresAt = try fields.optionalTimestamp("expires_at")
        lastError = try fields.failure("last_error")
        lease = try fields.lease()
        history = try fields.history()
        extra = fields.unknown()
    }

    /// Reads a record from its JSON text: the one way msg decodes a record's bytes.
    /// The shape msg writes is read straight from the bytes; anything else, and every
    /// error, goes through ``JSONParser`` and ``init(json:)``, which word the error.
    /// - Throws: for `origin` ``RecordOrigin/input``, `badInput` naming the problem;
    ///   for ``RecordOrigin/stored``, `corrupt` (a damaged record).
    public init(decoding json: UnsafeBufferPointer<UInt8>, origin: RecordOrigin) throws(MsgError) {
        if let message = RecordDecoder.decode(json) {
            self = message
            return
        }
        let value: JSONValue
        switch origin {
        case .input:
            value = try JSONParser.parseInput(Array(json))
        case .stored:
            do throws(JSONParser.Failure) {
                value = try JSONParser.parse(json)
            } catch {
                throw MsgError(.corrupt, "the stored record is not valid JSON: \(error)")
            }
        }
        do throws(MsgError) {
            try self.init(json: value)
        } catch {
            guard origin == .stored else { throw error }
            throw MsgError(.corrupt, "the stored record is not valid: \(error.message)")
        }
    }

    /// Reads one line of JSON text given by a user: ``init(decoding:origin:)`` for text.
    /// - Throws: `MsgError.badInput` for invalid JSON or a wrong field.
    public init(jsonText: String) throws(MsgError) {
        let bytes = Array(jsonText.utf8)
        self = try bytes.withUnsafeBufferPointer { (b) throws(MsgError) in try Message(decoding: b, origin: .input) }
    }

    /// Writes the record as one compact JSON object (no newline), in the layout
    /// ``RecordLayout`` owns. `includeHistory: false` leaves `history` out, as
    /// `queue ls` does; `history` is always the last key.
    public func write(to w: inout JSONWriter, includeHistory: Bool = true) {
        RecordLayout.write(self, to: &w, includeHistory: includeHistory)
    }

    /// Writes the record as a destination receives it: as stored, but without its
    /// `lease` (the sender's host and pid are none of the receiver's business) and
    /// its `history` (the sender's account of its attempts), and with `status`
    /// `delivered`, which it is once the destination has it (msg-record(5)).
    public func writeDelivered(to w: inout JSONWriter) {
        var delivered = self
        delivered.lease = nil
        delivered.status = .delivered
        delivered.write(to: &w, includeHistory: false)
    }

    /// Writes the `history` array.
    public func writeHistory(to w: inout JSONWriter) {
        RecordLayout.writeHistory(history, to: &w)
    }

    /// The record as one line of compact JSON text (no newline).
    public func jsonText(includeHistory: Bool = true) -> String {
        var w = JSONWriter()
        write(to: &w, includeHistory: includeHistory)
        return String(decoding: w.bytes, as: UTF8.self)
    }
}

extension Message.Failure {
    /// Writes `{"code","message","retryable","at"}`.
    public func write(to w: inout JSONWriter) {
        w.raw("{")
        w.key("code", first: true); w.string(code)
        w.key("message"); w.string(message)
        w.key("retryable"); retryable ? w.raw("true") : w.raw("false")
        w.key("at"); w.timestamp(at)
        w.raw("}")
    }
}

extension Message.Event {
    /// Writes `{"at","event","status","error"?}` and any extra fields.
    public func write(to w: inout JSONWriter) {
        w.raw("{")
        w.key("at", first: true); w.timestamp(at)
        w.key("event"); w.string(event)
        w.key("status"); w.string(status.rawValue)
        if let error { w.key("error"); error.write(to: &w) }
        for member in extra {
            w.raw(","); w.string(member.key); w.raw(":"); w.value(member.value)
        }
        w.raw("}")
    }
}

/// Where a record's text comes from, which decides what a fault in it is.
public enum RecordOrigin: Sendable, Equatable {
    /// A user's input: a fault is `badInput` (exit 65), reported by line.
    case input
    /// A store: a fault is `corrupt` (exit 74), a damaged record.
    case stored
}
