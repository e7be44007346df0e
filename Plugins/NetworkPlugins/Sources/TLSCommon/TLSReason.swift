#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import NIOSSL

/// What went wrong in a sender's TLS, in one line a user can act on. Every such
/// failure is a configuration error (exit 78): retrying cannot help until a
/// certificate, a name or a scheme is fixed, and the messages stay queued.
public enum TLSReason {
    /// The error's words for the peer at `display` (`tls://HOST:PORT`), whose
    /// certificate should name `name`, or nil when it is no TLS failure.
    /// `probe` fetches the receiver's certificate without verifying it, to tell an
    /// expired one from one no trusted CA signed (BoringSSL says only that it did
    /// not verify); it is called only then, and nothing is sent over it.
    public static func explain(_ error: any Error, display: String, name: String,
                               probe: () -> NIOSSLCertificate?) -> MsgError? {
        if let e = error as? NameMismatch {
            return MsgError(.config, "\(display): \(e.description); nothing was sent (server_name= names the host the certificate is for)")
        }
        if let e = error as? NIOSSLExtraError, e == .failedToValidateHostname {
            return MsgError(.config, "\(display): its certificate is not for \(name); nothing was sent (server_name= names the host the certificate is for)")
        }
        guard error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError else { return nil }
        let why: String
        switch code(error) {
        case "CERTIFICATE_VERIFY_FAILED":
            why = unverified(probe(), name: name)
        case "TLSV13_ALERT_CERTIFICATE_REQUIRED", "TLSV1_ALERT_CERTIFICATE_REQUIRED":
            why = "the receiver wants a client certificate (cert=FILE&key=FILE)"
        case "SSLV3_ALERT_BAD_CERTIFICATE", "TLSV1_ALERT_UNKNOWN_CA", "SSLV3_ALERT_CERTIFICATE_UNKNOWN",
             "SSLV3_ALERT_HANDSHAKE_FAILURE", "TLSV1_ALERT_ACCESS_DENIED", "SSLV3_ALERT_CERTIFICATE_EXPIRED":
            why = "the receiver refused this sender's certificate (\(code(error) ?? "")); it wants one its client_ca= signed"
        case "WRONG_VERSION_NUMBER":
            why = "the receiver does not speak TLS there (WRONG_VERSION_NUMBER: a port without TLS, such as a tcp:// listener's, or an SMTP port that wants STARTTLS, smtp://)"
        case "TLSV1_ALERT_PROTOCOL_VERSION", "UNSUPPORTED_PROTOCOL":
            why = "no TLS version in common (msg speaks TLS 1.2 and 1.3)"
        case "EOF during handshake":
            // A listener past its caps closes so: a passing state, tried again later.
            return MsgError(.unreachable, "\(display) closed the connection during the TLS handshake; trying again later")
        case let other?:
            why = "the TLS handshake failed (\(other))"
        case nil:
            if let e = error as? NIOSSLError, case .uncleanShutdown = e { return nil }
            why = "the TLS handshake failed (\(short(error)))"
        }
        return MsgError(.config, "\(display): \(why); nothing was sent")
    }

    /// Why a certificate did not verify, from the certificate itself.
    public static func unverified(_ certificate: NIOSSLCertificate?, name: String) -> String {
        guard let certificate else { return "its certificate does not verify (CERTIFICATE_VERIFY_FAILED)" }
        let now = time(nil)
        if certificate.notValidAfter < now {
            return "its certificate expired on \(date(certificate.notValidAfter))"
        }
        if certificate.notValidBefore > now {
            return "its certificate is not valid before \(date(certificate.notValidBefore))"
        }
        return "its certificate is not signed by a CA msg trusts (the system's, or ca=FILE for a private one)"
    }

    /// BoringSSL's reason code in the error (`CERTIFICATE_VERIFY_FAILED`), if any.
    public static func code(_ error: any Error) -> String? {
        let text = "\(error)"
        let known = ["CERTIFICATE_VERIFY_FAILED", "TLSV13_ALERT_CERTIFICATE_REQUIRED", "TLSV1_ALERT_CERTIFICATE_REQUIRED", "SSLV3_ALERT_BAD_CERTIFICATE",
                     "TLSV1_ALERT_UNKNOWN_CA", "SSLV3_ALERT_CERTIFICATE_UNKNOWN", "SSLV3_ALERT_HANDSHAKE_FAILURE",
                     "TLSV1_ALERT_ACCESS_DENIED", "SSLV3_ALERT_CERTIFICATE_EXPIRED", "WRONG_VERSION_NUMBER",
                     "TLSV1_ALERT_PROTOCOL_VERSION", "UNSUPPORTED_PROTOCOL", "PEER_DID_NOT_RETURN_A_CERTIFICATE",
                     "NO_SHARED_CIPHER", "HTTP_REQUEST", "KEY_VALUES_MISMATCH", "NO_CERTIFICATE_SET",
                     "EOF during handshake"]
        return known.first { text.contains($0) }
    }

    /// An error's text, at most 200 characters.
    public static func short(_ error: any Error) -> String {
        let text = "\(error)"
        return text.count > 200 ? String(text.prefix(200)) + "…" : text
    }

    /// Whether `host` is an IP address (which SNI must not carry).
    public static func isAddress(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// `2026-11-25 10:00:00 UTC`.
    public static func date(_ t: time_t) -> String {
        var t = t
        var parts = tm()
        gmtime_r(&t, &parts)
        var buffer = [CChar](repeating: 0, count: 32)
        let n = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S UTC", &parts)
        return String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
