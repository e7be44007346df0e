import AsyncHTTPClient
import struct Foundation.URL
import MsgKit
import NIOHTTP1

/// Which redirects a POST follows with `follow_redirects=yes` (msg-http(7)).
///
/// Only 307 and 308 repeat the same method and body, so only their final answer
/// can say the message arrived. 301, 302 and 303 turn a POST into a GET without
/// the body in every client and browser: an answer to that says nothing about the
/// message, so they end the attempt as `config` (the run stops, nothing is marked
/// sent) and the user puts the new URL in the transport. A redirect from https://
/// to http:// is refused the same way. To another origin (scheme, host or port),
/// credentials and the webhook signature are not sent: `Authorization`,
/// `Proxy-Authorization`, `Cookie`, every header of `headers_file`, and
/// `webhook-id`, `webhook-timestamp`, `webhook-signature`.
enum Redirect {
    /// The most redirects followed for one message.
    static let limit = 5

    /// The headers never sent to another origin, besides those of `headers_file`.
    static let credentials = ["authorization", "proxy-authorization", "cookie", "webhook-id", "webhook-timestamp", "webhook-signature"]

    /// What to do with an answer.
    enum Step {
        /// Not a redirect to follow: the answer is the outcome.
        case done
        /// Send the same request to this URL with these headers.
        case follow(URL, HTTPHeaders)
        /// End the attempt with this error (`config`).
        case refuse(MsgError)
    }

    /// The step after `status` with `location` to request `from`, after `hops` redirects.
    static func step(status: Int, location: String?, from: URL, headers: HTTPHeaders, hops: Int, private names: Set<String>, host: String) -> Step {
        guard (300..<400).contains(status), status != 304 else { return .done }
        guard let location, let to = URL(string: location, relativeTo: from)?.absoluteURL, let scheme = to.scheme?.lowercased(),
              scheme == "http" || scheme == "https", to.host != nil else {
            return .refuse(MsgError(.config, "\(host) answered \(status) without a usable Location; check the URL"))
        }
        guard status == 307 || status == 308 else {
            return .refuse(MsgError(.config, "\(host) answered \(status) to \(to.absoluteString): following it would turn the POST into a GET without its body, so msg does not; put that URL in the transport (msg-http(7))"))
        }
        guard hops < limit else { return .refuse(MsgError(.config, "\(host) redirects more than \(limit) times; check the URL")) }
        if from.scheme?.lowercased() == "https" && scheme == "http" {
            return .refuse(MsgError(.config, "\(host) redirects from https:// to \(to.absoluteString); msg does not send a message unencrypted after it was asked to encrypt it"))
        }
        var next = headers
        if !sameOrigin(from, to) {
            for name in headers.map(\.name) where credentials.contains(name.lowercased()) || names.contains(name.lowercased()) {
                next.remove(name: name)
            }
        }
        return .follow(to, next)
    }

    /// Whether two URLs have one origin: scheme, host and port.
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        func port(_ u: URL) -> Int? { u.port ?? (u.scheme?.lowercased() == "https" ? 443 : u.scheme?.lowercased() == "http" ? 80 : nil) }
        return a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased() && port(a) == port(b)
    }
}
