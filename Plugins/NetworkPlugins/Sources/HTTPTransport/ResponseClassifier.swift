import AsyncHTTPClient
import MsgKit
import MsgSupport
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import TLSCommon

/// How an answer, or the lack of one, becomes a delivery outcome (msg-http(7)):
///
/// | answer                                  | outcome                               |
/// |-----------------------------------------|---------------------------------------|
/// | 2xx                                     | delivered: the message is `sent`      |
/// | 429; 503 with Retry-After               | `rate_limited`, waiting as asked      |
/// | 408, 425, other 5xx                     | `remote` (retried)                    |
/// | 401, 407                                | `config`: the run stops (exit 78)     |
/// | 3xx not followed (301/302/303 never are) | `config`: the URL is wrong           |
/// | other 4xx, 1xx                          | `rejected` (dead)                     |
/// | refused, no route, name unknown         | `unreachable` (retried, not counted)  |
/// | connection lost after the request left  | `remote` (retried, counted)           |
/// | certificate that does not verify        | `config`, naming the host             |
/// | no answer by the deadline               | `timeout` (`unreachable` if unsent)   |
///
/// Only the status, headers and first KiB of a body are read (``ResponseReader``);
/// a 307 or 308 is followed with `follow_redirects=yes` (``Redirect``).
///
/// A credentials error stops the run instead of killing every message it meets:
/// an expired API key is fixed once, and the messages are all still queued.
enum ResponseClassifier {
    /// The outcome of one message's exchange.
    static func outcome(_ exchange: Exchange, host: String, deadline: MsgDuration, now: Int64) -> DeliveryOutcome {
        if let refused = exchange.refused { return .failed(refused, retryAfter: nil) }
        guard let answer = exchange.answer else { return .failed(classify(exchange, host: host, deadline: deadline), retryAfter: nil) }
        return outcome(status: answer.status, headers: answer.headers, body: answer.body, host: host, now: now)
    }

    static func outcome(status: Int, headers: HTTPHeaders, body: [UInt8], host: String, now: Int64) -> DeliveryOutcome {
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
    static func summary(status: Int, body: [UInt8], host: String) -> String {
        let reason = HTTPResponseStatus(statusCode: status).reasonPhrase
        var text = "\(host) answered \(status)\(reason.isEmpty ? "" : " " + reason)"
        let line = String(decoding: body.prefix { $0 != 10 && $0 != 13 }, as: UTF8.self)
        if !line.isEmpty { text += ": " + (line.count > 200 ? String(line.prefix(200)) + "…" : line) }
        return text
    }

    /// Why no answer came. Until the request head was written nothing reached the
    /// server: `unreachable`, the attempt not counted. From then on the server may
    /// have acted on it, so a failure counts as an attempt (`timeout`, `remote`).
    static func classify(_ exchange: Exchange, host: String, deadline: MsgDuration) -> MsgError {
        if let refused = exchange.refused { return refused }
        let error = exchange.error ?? HTTPClientError.remoteConnectionClosed
        let sent = exchange.sent
        if let e = error as? HTTPClientError {
            switch e {
            case .deadlineExceeded, .readTimeout, .writeTimeout:
                if !sent { return MsgError(.unreachable, "cannot connect to \(host) within \(deadline)") }
                return MsgError(.timeout, "\(host) did not answer within \(deadline)")
            case .connectTimeout, .getConnectionFromPoolTimeout, .tlsHandshakeTimeout:
                return MsgError(.unreachable, "cannot connect to \(host) within \(deadline)")
            case .remoteConnectionClosed:
                return MsgError(.remote, "\(host) closed the connection before answering")
            case .invalidURL, .emptyHost, .emptyScheme:
                return MsgError(.config, "the URL for \(host) is not a valid http(s) URL")
            default:
                return MsgError(.remote, "HTTP request to \(host) failed: \(e)")
            }
        }
        if let mismatch = error as? NameMismatch {
            return MsgError(.config, "TLS with \(host) failed: \(mismatch.description); nothing was sent (ca_file= and the URL's host must match the server's certificate)")
        }
        if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError {
            return MsgError(.config, "TLS with \(host) failed: \(tlsReason(error)); msg sends nothing over a connection it cannot verify (ca_file=FILE trusts a private CA)")
        }
        if sent {
            return MsgError(.remote, "the connection to \(host) failed after the request was sent (\(short(error))); it may have arrived, so it counts as an attempt")
        }
        if let e = error as? NIOConnectionError {
            if e.connectionErrors.isEmpty, HostLookup.check(HostLookup.hostName(ofAuthority: host)) == .noSuchHost {
                return MsgError(.remote, "cannot connect to \(host): no such host (the name does not exist); counted as a failed attempt")
            }
            if let dns = e.dnsAError ?? e.dnsAAAAError { return MsgError(.unreachable, "cannot resolve \(host): \(dns)") }
            return MsgError(.unreachable, "cannot connect to \(host): \(e.connectionErrors.first.map { reason($0.error) } ?? "no address answered")")
        }
        if error is IOError { return MsgError(.unreachable, "cannot connect to \(host): \(reason(error))") }
        if error is ChannelError { return MsgError(.unreachable, "cannot connect to \(host): \(error)") }
        if error is SocketAddressError {
            if HostLookup.check(HostLookup.hostName(ofAuthority: host)) == .noSuchHost {
                return MsgError(.remote, "cannot connect to \(host): no such host (the name does not exist); counted as a failed attempt")
            }
            return MsgError(.unreachable, "cannot resolve \(host): \(error)")
        }
        return MsgError(.remote, "HTTP request to \(host) failed: \(error)")
    }

    /// A system call's error as the system says it (`Connection refused`), read once:
    /// not NIO's `connection reset (error set): Connection refused (errno: 111)`.
    static func reason(_ error: any Error) -> String {
        if let io = error as? IOError { return SystemCalls.describe(io.errnoCode) }
        return "\(error)"
    }

    /// An error's text, at most 200 characters.
    static func short(_ error: any Error) -> String {
        let text = reason(error)
        return text.count > 200 ? String(text.prefix(200)) + "…" : text
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
