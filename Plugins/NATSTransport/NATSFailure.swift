import CNATS
import MsgKit

/// A libnats status read as a delivery class (msg-nats(7) FAILURES).
enum NATSFailure {
    /// The failure of connecting to `server`.
    static func connecting(_ status: natsStatus, server: String) -> MsgError {
        let text = lastError(status)
        switch status {
        case NATS_NO_SERVER, NATS_IO_ERROR, NATS_CONNECTION_CLOSED, NATS_CONNECTION_DISCONNECTED, NATS_STALE_CONNECTION:
            return MsgError(.unreachable, "nats: cannot reach \(server): \(text)")
        case NATS_TIMEOUT:
            return MsgError(.unreachable, "nats: \(server) did not answer in time: \(text)")
        case NATS_CONNECTION_AUTH_FAILED, NATS_NOT_PERMITTED:
            return MsgError(.config, "nats: \(server) refused the credentials: \(text)")
        case NATS_SSL_ERROR, NATS_SECURE_CONNECTION_WANTED, NATS_SECURE_CONNECTION_REQUIRED:
            return MsgError(.config, "nats: TLS with \(server) failed: \(text)")
        default:
            return MsgError(.config, "nats: cannot connect to \(server): \(text)")
        }
    }

    /// The failure of one publish on `subject`. A subject no stream takes is the
    /// configuration's fault, never the message's: with a `fixedSubject` every
    /// message goes there, so the run stops (`config`); with a subject made per
    /// message the others may have streams, so this one stays queued and is tried
    /// again by the policy (`unreachable`), until a stream takes it. Only a stream's
    /// own refusal (its limits, its size) makes a message dead.
    static func publishing(_ status: natsStatus, code: Int, text: String, subject: String, fixedSubject: Bool) -> MsgError {
        switch status {
        case NATS_TIMEOUT:
            return MsgError(.timeout, "nats: no acknowledgement from JetStream for \(subject) within the deadline")
        case NATS_NO_RESPONDERS:
            let what = "nats: no stream takes subject \(subject) (no responders)"
            return fixedSubject ? MsgError(.config, what + "; add a stream for it, or fix the URL")
                : MsgError(.unreachable, what + "; kept queued until a stream takes it (add one, or fix the URL's subject)")
        case NATS_CONNECTION_CLOSED, NATS_CONNECTION_DISCONNECTED, NATS_NO_SERVER, NATS_IO_ERROR, NATS_STALE_CONNECTION, NATS_DRAINING:
            return MsgError(.unreachable, "nats: the connection was lost before JetStream acknowledged \(subject): \(text)")
        case NATS_NOT_PERMITTED:
            return MsgError(.config, "nats: not permitted to publish to \(subject): \(text)")
        case NATS_MAX_PAYLOAD:
            return MsgError(.rejected, "nats: the message is larger than the server's max_payload: \(text)")
        case NATS_ERR where code != 0:
            // The stream's own answer. Cluster or resource trouble passes; anything
            // else (its limits with discard new, a stream that was expected) is the
            // stream refusing this message.
            let described = "nats: JetStream refused the message on \(subject): \(text) (err_code \(code))"
            switch code {
            case 10008, 10023, 10074:   // cluster not available, insufficient resources, cluster no peers
                return MsgError(.remote, described)
            case 10060:   // the stream= named is not the one the subject reaches: the URL's fault
                return fixedSubject ? MsgError(.config, described + "; fix stream= or the subject")
                    : MsgError(.unreachable, described + "; kept queued (fix stream= or the subject)")
            default:
                return MsgError(.rejected, described)
            }
        default:
            return MsgError(.remote, "nats: publishing to \(subject) failed: \(text)")
        }
    }

    /// libnats's text for `status`, with the detail of its last error when it has one.
    static func lastError(_ status: natsStatus) -> String {
        var last = NATS_OK
        if let detail = nats_GetLastError(&last), last == status {
            let text = String(cString: detail)
            if !text.isEmpty { return text }
        }
        return String(cString: natsStatus_GetText(status))
    }
}
