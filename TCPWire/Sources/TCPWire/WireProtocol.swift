import MsgKit

/// The NDJSON wire protocol of `tcp://` (msg-tcp(7)).
///
/// The client sends one line per request; the receiver answers every line with one
/// line, in order:
/// - `{"op":"hello","version":1,"token":"…"}` → `{"op":"hello","ok":true,"version":1}`
///   (a wrong token: `"ok":false` with an error, then the receiver closes);
/// - a record → `{"id":…,"ok":true}` or `{"id":…,"ok":false,"error":{"code","message","retryable"[,"retry_after"]}}`;
/// - `{"op":"lookup","id":…}` → `{"id":…,"delivered":true|false|null}`.
enum Wire {
    /// The protocol version this side speaks.
    static let version = 1

    /// The client's first line.
    static func hello(token: String?) -> [UInt8] {
        var w = JSONWriter(capacity: 64)
        w.raw("{\"op\":\"hello\",\"version\":")
        w.int(version)
        if let token {
            w.key("token")
            w.string(token)
        }
        w.raw("}\n")
        return w.bytes
    }

    /// The receiver's answer to a good hello.
    static func helloAccepted() -> [UInt8] { Array("{\"op\":\"hello\",\"ok\":true,\"version\":\(version)}\n".utf8) }

    /// The receiver's answer to a bad hello.
    static func helloRefused(_ error: MsgError) -> [UInt8] {
        var w = JSONWriter(capacity: 128)
        w.raw("{\"op\":\"hello\",\"ok\":false,\"error\":")
        writeError(error, retryAfter: nil, to: &w)
        w.raw("}\n")
        return w.bytes
    }

    /// A positive acknowledgement of record `id`.
    static func accepted(id: String) -> [UInt8] {
        var w = JSONWriter(capacity: 64)
        w.raw("{\"id\":")
        w.string(id)
        w.raw(",\"ok\":true}\n")
        return w.bytes
    }

    /// A negative acknowledgement; `id` is null when the line had none that could be read.
    static func refused(id: String?, _ error: MsgError, retryAfter: MsgDuration? = nil) -> [UInt8] {
        var w = JSONWriter(capacity: 160)
        w.raw("{\"id\":")
        if let id { w.string(id) } else { w.raw("null") }
        w.raw(",\"ok\":false,\"error\":")
        writeError(error, retryAfter: retryAfter, to: &w)
        w.raw("}\n")
        return w.bytes
    }

    /// A lookup request.
    static func lookup(id: String) -> [UInt8] {
        var w = JSONWriter(capacity: 64)
        w.raw("{\"op\":\"lookup\",\"id\":")
        w.string(id)
        w.raw("}\n")
        return w.bytes
    }

    /// The answer to a lookup; null when the receiver's inbox cannot tell.
    static func lookupAnswer(id: String, delivered: Bool?) -> [UInt8] {
        var w = JSONWriter(capacity: 64)
        w.raw("{\"id\":")
        w.string(id)
        switch delivered {
        case true?: w.raw(",\"delivered\":true}\n")
        case false?: w.raw(",\"delivered\":false}\n")
        case nil: w.raw(",\"delivered\":null}\n")
        }
        return w.bytes
    }

    private static func writeError(_ error: MsgError, retryAfter: MsgDuration?, to w: inout JSONWriter) {
        w.raw("{\"code\":")
        w.string(error.code.name)
        w.key("message")
        w.string(error.message)
        w.key("retryable")
        error.code.isRetryable ? w.raw("true") : w.raw("false")
        if let retryAfter {
            w.key("retry_after")
            w.string(retryAfter.description)
        }
        w.raw("}")
    }

    /// One answer line as the client reads it.
    enum Answer: Equatable {
        case hello(refused: MsgError?)
        case ack(id: String?, DeliveryOutcome)
        case lookup(id: String, delivered: Bool?)
    }

    /// Reads one answer line. - Throws: `remote` when the line is not a protocol answer.
    static func answer(_ line: [UInt8]) throws(MsgError) -> Answer {
        let value: JSONValue
        do { value = try JSONParser.parse(line) } catch {
            throw MsgError(.remote, "the receiver answered with invalid JSON: \(error)")
        }
        if value["op"]?.stringValue == "hello" {
            guard value["ok"] != .bool(true) else { return .hello(refused: nil) }
            // A hello refused as a configuration error (the other wire: TLS against
            // clear text) stays one; other refusals read as those of records do.
            if value["error"]?["code"]?.stringValue == MsgError.Code.config.name {
                return .hello(refused: MsgError(.config, value["error"]?["message"]?.stringValue ?? "no reason given"))
            }
            return .hello(refused: refusal(value["error"]))
        }
        let id = value["id"]?.stringValue
        if let delivered = value["delivered"] {
            guard let id else { throw MsgError(.remote, "the receiver answered a lookup without an id") }
            switch delivered {
            case .bool(let b): return .lookup(id: id, delivered: b)
            case .null: return .lookup(id: id, delivered: nil)
            default: throw MsgError(.remote, "the receiver's lookup answer has \(delivered.kindName) for delivered")
            }
        }
        switch value["ok"] {
        case .bool(true)?: return .ack(id: id, .delivered(confirmed: false))
        case .bool(false)?:
            let error = refusal(value["error"])
            var retryAfter: MsgDuration?
            if error.code == .rateLimited, let text = value["error"]?["retry_after"]?.stringValue {
                retryAfter = try? MsgDuration(parsing: text)
            }
            return .ack(id: id, .failed(error, retryAfter: retryAfter))
        default:
            throw MsgError(.remote, "the receiver's answer has no \"ok\" or \"delivered\"")
        }
    }

    /// The delivery class of a negative ack: `rate_limited` as such, otherwise
    /// `remote` when retryable and `rejected` when not.
    private static func refusal(_ error: JSONValue?) -> MsgError {
        let message = error?["message"]?.stringValue ?? "no reason given"
        let code = error?["code"]?.stringValue ?? "remote"
        if code == MsgError.Code.rateLimited.name { return MsgError(.rateLimited, "receiver: \(message)") }
        let retryable = error?["retryable"] != .bool(false)
        return MsgError(retryable ? .remote : .rejected, "receiver: \(message)")
    }

    /// Compares two secrets in time that depends only on their lengths.
    static func sameSecret(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<max(x.count, y.count) {
            difference |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0)
        }
        return difference == 0
    }
}
