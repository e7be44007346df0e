import AsyncHTTPClient
import Dispatch
import MsgKit
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import TLSCommon
import struct Foundation.URL

/// The `http://` and `https://` transport: one POST per message, on AsyncHTTPClient
/// (msg-http(7)).
///
/// Each request carries `Idempotency-Key` (the message id, as the IETF httpapi
/// draft writes it: a structured-field string), so a server that deduplicates
/// applies an in-doubt message once however often it is sent. Connections are
/// kept alive, and up to `concurrency` requests are in flight; outcomes come back
/// in order. The answer is read by ``ResponseClassifier``.
public final class HTTPTransport: Transport {
    let settings: HTTPSettings
    private let clients: HTTPClients
    private let version = MsgVersion.current
    /// Lower-cased names of the `headers_file` headers: never sent to another origin.
    private let privateNames: Set<String>

    /// How long `lookup` waits for an answer.
    static let lookupDeadline: Int64 = 30_000

    public init(url: PluginURL) throws(MsgError) {
        settings = try HTTPSettings(url)
        // The same TLS as tls:// and smtp:// (TLSSetup), names checked by HTTPClients.
        let tls = try TLSSetup.client(TLSSetup.Files(ca: settings.caFile.map { ("ca_file", $0) }, cert: settings.certificateFile.map { ("cert_file", $0) },
                                                     key: settings.keyFile.map { ("key_file", $0) }), display: "http: \(settings.host)")
        clients = HTTPClients(tls: tls, concurrency: settings.concurrency)
        privateNames = Set(settings.extraHeaders.map { $0.0.lowercased() })
    }

    deinit { clients.shutdown() }

    /// Requests in flight at once in one call: a flush gives such a call one message per destination.
    public var parallelism: Int { settings.concurrency }

    public func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> [DeliveryOutcome] {
        let host = settings.host
        // Each request is made just before it is sent, so a signature's timestamp is
        // when it left, however long the requests before it took.
        return run(records.count, request: { self.request(for: records[$0]) }, deadline: deadline) { exchange in
            ResponseClassifier.outcome(exchange, host: host, deadline: deadline, now: Timestamp.now().milliseconds)
        }
    }

    public func lookup(_ id: String) throws(MsgError) -> Bool? {
        try lookup([id])[0]
    }

    public func lookup(_ ids: [String]) throws(MsgError) -> [Bool?] {
        guard let template = settings.lookupTemplate else { return ids.map { _ in nil } }
        let deadline = MsgDuration(milliseconds: Self.lookupDeadline)
        let request = { (i: Int) -> Result<Outgoing, MsgError> in
            let url = template.replacingAll("{id}", with: Self.pathEncoded(ids[i]))
            guard let parsed = URL(string: url) else { return .failure(MsgError(.config, "http: the lookup URL \(url) is not valid")) }
            return .success(Outgoing(url: parsed, method: .GET, headers: self.headers(id: ids[i]), body: nil))
        }
        let host = settings.host
        let answers = run(ids.count, request: request, deadline: deadline) { exchange -> Result<Bool?, MsgError> in
            switch exchange.answer?.status {
            case 200: return .success(true)
            case 404: return .success(false)
            case .some: return .success(nil)
            case nil: return .failure(ResponseClassifier.classify(exchange, host: host, deadline: deadline))
            }
        }
        return try answers.map { answer throws(MsgError) -> Bool? in try answer.get() }
    }

    /// One request as msg sends it (again, to a redirect's URL).
    struct Outgoing: Sendable {
        var url: URL
        var method: HTTPMethod
        var headers: HTTPHeaders
        var body: [UInt8]?
    }

    /// Sends `count` requests, made by `make` just before each is sent, with at most
    /// `concurrency` in flight, each within `deadline` (redirects included), and
    /// reads each exchange with `read`; a request that could not be made is its error.
    private func run<T: Sendable>(_ count: Int, request make: (Int) -> Result<Outgoing, MsgError>, deadline: MsgDuration,
                                  read: @escaping @Sendable (Exchange) -> T) -> [T] where T: FailureRepresentable {
        let results = NIOLockedValueBox([T?](repeating: nil, count: count))
        let window = DispatchSemaphore(value: settings.concurrency)
        let done = DispatchGroup()
        let milliseconds = max(1, deadline.milliseconds)
        for i in 0..<count {
            window.wait()
            let outgoing: Outgoing
            switch make(i) {
            case .success(let made): outgoing = made
            case .failure(let error):
                results.withLockedValue { $0[i] = T(failure: error) }
                window.signal()
                continue
            }
            done.enter()
            Self.send(outgoing, Route(clients: clients, connectTimeout: milliseconds, follow: settings.followRedirects,
                                      privateNames: privateNames, host: settings.host),
                      hops: 0, sent: false, deadline: .now() + .milliseconds(milliseconds)) { exchange in
                let value = read(exchange)
                results.withLockedValue { $0[i] = value }
                window.signal()
                done.leave()
            }
        }
        done.wait()
        return results.withLockedValue { $0.map { $0! } }
    }

    /// Sends one request and follows the redirects ``Redirect`` allows, all by
    /// `deadline`; calls `done` with the last exchange.
    /// Where a message's requests go and which redirects they follow.
    struct Route: Sendable {
        let clients: HTTPClients
        let connectTimeout: Int64
        let follow: Bool
        let privateNames: Set<String>
        let host: String
    }

    private static func send(_ outgoing: Outgoing, _ route: Route, hops: Int, sent: Bool, deadline: NIODeadline,
                             _ done: @escaping @Sendable (Exchange) -> Void) {
        let request: HTTPClient.Request
        do {
            request = try HTTPClient.Request(url: outgoing.url, method: outgoing.method, headers: outgoing.headers,
                                             body: outgoing.body.map { .bytes($0) })
        } catch {
            done(Exchange(refused: MsgError(.config, "http: '\(outgoing.url.absoluteString)' is not a valid http(s) URL"), sent: sent))
            return
        }
        let reader = ResponseReader()
        let client = route.clients.client(connectTimeout: route.connectTimeout, host: outgoing.url.host ?? "")
        client.execute(request: request, delegate: reader, deadline: deadline).futureResult.whenComplete { result in
            var exchange = Exchange(answer: reader.answer, error: nil, sent: sent || reader.sent)
            if exchange.answer == nil, case .failure(let error) = result { exchange.error = error }
            // Without follow_redirects a 3xx is the answer (ResponseClassifier: `config`).
            guard let answer = exchange.answer, route.follow else { return done(exchange) }
            switch Redirect.step(status: answer.status, location: answer.headers.first(name: "Location"), from: outgoing.url,
                                 headers: outgoing.headers, hops: hops, private: route.privateNames, host: route.host) {
            case .done:
                done(exchange)
            case .refuse(let error):
                done(Exchange(refused: error, sent: exchange.sent))
            case .follow(let url, let headers):
                var next = outgoing
                next.url = url
                next.headers = headers
                send(next, route, hops: hops + 1, sent: true, deadline: deadline, done)
            }
        }
    }

    /// The POST for one message, or why it cannot be made (`rejected`).
    private func request(for record: EncodedMessage) -> Result<Outgoing, MsgError> {
        let m = record.message
        // The id goes into headers: one that could end a header line is never sent.
        guard m.id.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7f }) else {
            return .failure(MsgError(.rejected, "the id cannot be sent in an HTTP header: it has a control or non-ASCII character"))
        }
        let body: [UInt8]
        var headers = headers(id: m.id)
        if settings.inputBody {
            body = Array(m.body.utf8)
            let type = m.headers.first { $0.key.lowercased() == "content-type" }?.value ?? settings.bodyContentType
            // Bytes, not Characters: Swift reads "\r\n" as one Character, equal to neither.
            guard !HTTPSettings.hasControlBytes(type) else {
                return .failure(MsgError(.rejected, "the message's Content-Type header has a control character (a line break?)"))
            }
            headers.replaceOrAdd(name: "Content-Type", value: type)
        } else {
            body = record.deliveredJSON
            headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        }
        if let signer = settings.signer {
            for (name, value) in signer.headers(id: m.id, timestamp: Timestamp.now().milliseconds / 1000, body: body) {
                headers.replaceOrAdd(name: name, value: value)
            }
        }
        guard let url = URL(string: settings.endpoint) else {
            return .failure(MsgError(.config, "http: '\(settings.endpoint)' is not a valid http(s) URL"))
        }
        return .success(Outgoing(url: url, method: .POST, headers: headers, body: body))
    }

    /// What every request carries.
    private func headers(id: String) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "User-Agent", value: "msg/\(version)")
        for (name, value) in settings.extraHeaders { headers.add(name: name, value: value) }
        // A structured-field string (RFC 8941): an id is quoted, with \ and " escaped.
        let quoted = id.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"")
        headers.replaceOrAdd(name: "Idempotency-Key", value: "\"\(quoted)\"")
        return headers
    }

    /// `id` made safe for a URL path segment.
    static func pathEncoded(_ id: String) -> String {
        var out = ""
        for b in id.utf8 {
            let c = Character(Unicode.Scalar(b))
            if c.isASCII && (c.isLetter || c.isNumber || "-._~".contains(c)) { out.append(c) } else {
                out += "%" + String(b, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }
}

/// What came of one message's request, its redirects followed.
struct Exchange: Sendable {
    /// The last answer, as far as it was read; nil when none came.
    var answer: ResponseReader.Answer?
    /// Why no answer came.
    var error: (any Error)?
    /// Whether any request may have reached a server (its head was written).
    var sent: Bool
    /// An attempt msg itself ended (a redirect it does not follow).
    var refused: MsgError?

    init(answer: ResponseReader.Answer?, error: (any Error)?, sent: Bool) {
        self.answer = answer
        self.error = error
        self.sent = sent
    }

    init(refused: MsgError, sent: Bool) {
        self.sent = sent
        self.refused = refused
    }
}

/// A result type that can stand for a request that could not be made.
protocol FailureRepresentable {
    init(failure: MsgError)
}

extension DeliveryOutcome: FailureRepresentable {
    init(failure: MsgError) { self = .failed(failure, retryAfter: nil) }
}

extension Result: FailureRepresentable where Success == Bool?, Failure == MsgError {
    init(failure: MsgError) { self = .failure(failure) }
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        let parts = self.split(separator: target, omittingEmptySubsequences: false)
        return parts.joined(separator: replacement)
    }

    func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
