import AsyncHTTPClient
import MsgKit
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// How an answer, or the lack of one, becomes a delivery outcome (msg-http(7)):
///
/// | answer                                  | outcome                               |
/// |-----------------------------------------|---------------------------------------|
/// | 2xx                                     | delivered: the message is `sent`      |
/// | 429; 503 with Retry-After               | `rate_limited`, waiting as asked      |
/// | 408, 425, other 5xx                     | `remote` (retried)                    |
/// | 401, 407                                | `config`: the run stops (exit 78)     |
/// | 3xx not followed                        | `config`: the URL is wrong            |
/// | other 4xx, 1xx                          | `rejected` (dead)                     |
/// | refused, no route, name unknown         | `unreachable` (retried, not counted)  |
/// | certificate that does not verify        | `config`, naming the host             |
/// | no answer by the deadline               | `timeout`                             |
///
/// A credentials error stops the run instead of killing every message it meets:
/// an expired API key is fixed once, and the messages are all still queued.
enum ResponseClassifier {
    static func outcome(status: Int, headers: HTTPHeaders, body: ByteBuffer?, host: String, now: Int64) -> DeliveryOutcome {
        let said = summary(status: status, body: body, host: host)
        switch status {
        case 200..<300: return .delivered(confirmed: false)
        case 429, 503:
            let wait = headers.first(name: "Retry-After").flatMap { RetryAfter.milliseconds($0, now: now) }.map { MsgDuration(milliseconds: $0) }
            if status == 429 || wait != nil { return .failed(MsgError(.rateLimited, said), retryAfter: wait) }
            return .failed(MsgError(.remote, said), retryAfter: nil)
        case 408, 425, 500..<600: return .failed(MsgError(.remote, said), retryAfter: nil)
        case 401, 407: return .failed(MsgError(.config, said + "; check the credentials in headers_file"), retryAfter: nil)
        case 300..<400:
            let location = headers.first(name: "Location").map { " to \($0)" } ?? ""
            return .failed(MsgError(.config, "\(host) answered \(status)\(location); use that URL, or add follow_redirects=yes"), retryAfter: nil)
        default: return .failed(MsgError(.rejected, said), retryAfter: nil)
        }
    }

    /// `api.example.com answered 400 Bad Request: {"error":"no such user"}`, the body
    /// cut to its first line and 200 characters.
    static func summary(status: Int, body: ByteBuffer?, host: String) -> String {
        let reason = HTTPResponseStatus(statusCode: status).reasonPhrase
        var text = "\(host) answered \(status)\(reason.isEmpty ? "" : " " + reason)"
        if let body, body.readableBytes > 0 {
            let bytes = body.getBytes(at: body.readerIndex, length: min(body.readableBytes, 600)) ?? []
            let line = String(decoding: bytes.prefix { $0 != 10 && $0 != 13 }, as: UTF8.self)
            if !line.isEmpty { text += ": " + (line.count > 200 ? String(line.prefix(200)) + "…" : line) }
        }
        return text
    }

    static func outcome(error: any Error, host: String, deadline: MsgDuration) -> DeliveryOutcome {
        .failed(classify(error, host: host, deadline: deadline), retryAfter: nil)
    }

    static func classify(_ error: any Error, host: String, deadline: MsgDuration) -> MsgError {
        if let e = error as? HTTPClientError {
            switch e {
            case .deadlineExceeded, .readTimeout, .writeTimeout:
                return MsgError(.timeout, "\(host) did not answer within \(deadline)")
            case .connectTimeout, .getConnectionFromPoolTimeout, .tlsHandshakeTimeout:
                return MsgError(.unreachable, "cannot connect to \(host) within \(deadline)")
            case .remoteConnectionClosed:
                return MsgError(.remote, "\(host) closed the connection before answering")
            case .redirectLimitReached, .redirectCycleDetected:
                return MsgError(.config, "\(host) redirects too often or in a cycle")
            case .invalidURL, .emptyHost, .emptyScheme:
                return MsgError(.config, "the URL for \(host) is not a valid http(s) URL")
            default:
                return MsgError(.remote, "HTTP request to \(host) failed: \(e)")
            }
        }
        if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError {
            return MsgError(.config, "TLS with \(host) failed: \(tlsReason(error)); msg sends nothing over a connection it cannot verify (ca_file=FILE trusts a private CA)")
        }
        if let e = error as? NIOConnectionError {
            if let dns = e.dnsAError ?? e.dnsAAAAError { return MsgError(.unreachable, "cannot resolve \(host): \(dns)") }
            return MsgError(.unreachable, "cannot connect to \(host): \(e.connectionErrors.first.map { "\($0.error)" } ?? "no address answered")")
        }
        if let e = error as? IOError { return MsgError(.unreachable, "cannot connect to \(host): \(e)") }
        if error is ChannelError { return MsgError(.unreachable, "cannot connect to \(host): \(error)") }
        if error is SocketAddressError { return MsgError(.unreachable, "cannot resolve \(host): \(error)") }
        return MsgError(.remote, "HTTP request to \(host) failed: \(error)")
    }

    /// What went wrong in a handshake, in a few words: BoringSSL's reason code
    /// (`CERTIFICATE_VERIFY_FAILED`) rather than its whole error stack.
    static func tlsReason(_ error: any Error) -> String {
        let text = "\(error)"
        if let e = error as? NIOSSLExtraError, e == .failedToValidateHostname {
            return "its certificate is not for that host"
        }
        for reason in ["CERTIFICATE_VERIFY_FAILED", "TLSV1_ALERT_UNKNOWN_CA", "SSLV3_ALERT_HANDSHAKE_FAILURE", "TLSV13_ALERT_CERTIFICATE_REQUIRED",
                       "WRONG_VERSION_NUMBER", "TLSV1_ALERT_PROTOCOL_VERSION", "SSLV3_ALERT_BAD_CERTIFICATE"] where text.contains(reason) {
            switch reason {
            case "CERTIFICATE_VERIFY_FAILED": return "its certificate does not verify (CERTIFICATE_VERIFY_FAILED)"
            case "TLSV13_ALERT_CERTIFICATE_REQUIRED", "SSLV3_ALERT_BAD_CERTIFICATE", "SSLV3_ALERT_HANDSHAKE_FAILURE":
                return "it refused the handshake (\(reason)); does it want a client certificate (cert_file, key_file)?"
            case "WRONG_VERSION_NUMBER": return "it does not speak TLS there (\(reason)); is it http://?"
            default: return reason
            }
        }
        return text.count > 200 ? String(text.prefix(200)) + "…" : text
    }
}
