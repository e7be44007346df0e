import Crypto
import MsgKit
import MsgSupport

/// Signs requests as Standard Webhooks does (standardwebhooks.com, spec 1.0):
/// `webhook-id` is the message id, `webhook-timestamp` the Unix time in seconds,
/// and `webhook-signature` is `v1,` and the base64 HMAC-SHA256 of
/// `<id>.<timestamp>.<body>`, keyed with the secret's bytes. The secret is written
/// as the spec gives it, base64 with an optional `whsec_` prefix.
struct WebhookSigner: Sendable {
    private let key: SymmetricKey

    /// - Throws: `config` when `secret` is not base64 or is empty.
    init(secret: String, from source: String) throws(MsgError) {
        var text = secret.trimmingNewlines
        if text.hasPrefix("whsec_") { text = String(text.dropFirst(6)) }
        guard let bytes = Base64.decode(text), !bytes.isEmpty else {
            throw MsgError(.config, "http: the signing secret in \(source) is not base64 (write it as whsec_ and base64, as Standard Webhooks gives it)")
        }
        key = SymmetricKey(data: bytes)
    }

    /// The three headers for `body` sent as message `id` at `timestamp` (seconds).
    func headers(id: String, timestamp: Int64, body: [UInt8]) -> [(String, String)] {
        var signed = Array("\(id).\(timestamp).".utf8)
        signed += body
        let mac = HMAC<SHA256>.authenticationCode(for: signed, using: key)
        return [("webhook-id", id), ("webhook-timestamp", String(timestamp)), ("webhook-signature", "v1," + Base64.encode(mac))]
    }
}

extension String {
    /// Without the line breaks a file's last line ends with.
    var trimmingNewlines: String {
        // Scalars, not Characters: "\r\n" is one Character, equal to neither.
        var s = Substring(self).unicodeScalars
        while let last = s.last, last == "\n" || last == "\r" || last == " " { s = s.dropLast() }
        return String(s)
    }
}
